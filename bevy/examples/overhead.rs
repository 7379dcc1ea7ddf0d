//! What the plugin costs per frame over a bare `Runner`, on the kit's arena (256 and 1024
//! fighters): a sync test (check distance 8, 2 players) driven by `app.update()` under the
//! plugin, against the same sync test driven by a bare `Runner::advance_synctest` loop with a
//! cue director and a presenter, in the same process, interleaved.
//!
//!     cargo run --release -p bevy_rollback_abilities --example overhead -- [ROUNDS] [FRAMES] [FIGHTERS…]
//!
//! Both start from the arena at frame 0 and run its warm-up as their script; both are measured
//! from frame 120 on. Times are thread CPU time (Bevy without `multi_threaded` runs every system
//! on the calling thread), medians over rounds of FRAMES frames each. At the end both worlds
//! are brought to the same frame and must have the same checksum.

mod common;

use bevy_rollback_abilities::prelude::*;
use common::{CHECK_DISTANCE, WARM_FRAMES, cpu_now, median, net, next_frame, plugin_app};
use ggrs::SessionBuilder;
use rollback_abilities::present::{Cue, CueDirector, Presenter};
use rollback_abilities::session::{GgrsConfig, PeerAddr, Runner};
use rollback_abilities_kit::arena::{Arena, ArenaGame, ArenaSpec};

/// A presenter a game would have: it sees every call.
#[derive(Default)]
struct Count(u64);

impl Presenter for Count {
    fn play(&mut self, _: &Cue) {
        self.0 += 1;
    }
    fn cancel(&mut self, _: &Cue) {
        self.0 += 1;
    }
    fn confirmed(&mut self, _: &Cue) {
        self.0 += 1;
    }
}

type Session = ggrs::SyncTestSession<GgrsConfig<ArenaGame, PeerAddr>>;
type ArenaWorld = rollback_abilities::World<ArenaGame>;

/// The bare side: a runner over a sync-test session, the arena's warm-up as its script.
struct Bare {
    runner: Runner<ArenaGame>,
    session: Session,
    script: Box<dyn Fn(&mut ArenaWorld)>,
    presenter: Count,
}

impl Bare {
    fn new(spec: ArenaSpec) -> Bare {
        let arena = Arena::unwarmed(spec);
        let script = Box::new(arena.warmup());
        let session = SessionBuilder::new()
            .with_num_players(2)
            .expect("players")
            .with_max_prediction_window(net().max_prediction)
            .with_input_delay(0)
            .with_check_distance(CHECK_DISTANCE)
            .start_synctest_session()
            .expect("a sync test");
        let mut runner = Runner::new(arena.world, net().max_prediction, 0);
        runner.director = Some(CueDirector::new());
        Bare { runner, session, script, presenter: Count::default() }
    }

    fn frame(&mut self) {
        let inputs = Arena::player_inputs(self.runner.world().next_frame());
        let script = &self.script;
        self.runner
            .advance_synctest(&mut self.session, &inputs, Some(&mut self.presenter), |w| script(w))
            .expect("no mismatch");
    }
}

fn main() {
    let (rounds, frames, fighters) = common::args(20);
    println!("| fighters | bare Runner | plugin (app.update) | overhead |");
    println!("|---|---|---|---|");
    for entities in fighters {
        let spec = ArenaSpec { entities, ..ArenaSpec::default() };
        let mut bare = Bare::new(spec);
        let mut app = plugin_app(spec);
        while bare.runner.world().next_frame() < WARM_FRAMES {
            bare.frame();
        }
        while next_frame(&app) < WARM_FRAMES {
            app.update();
        }
        let (mut b, mut p) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let t = cpu_now();
            for _ in 0..frames {
                bare.frame();
            }
            b.push((cpu_now() - t).as_secs_f64() / f64::from(frames));
            let start = next_frame(&app);
            let t = cpu_now();
            for _ in 0..frames {
                app.update();
            }
            let done = next_frame(&app) - start;
            p.push((cpu_now() - t).as_secs_f64() / f64::from(done.max(1)));
        }
        let (b, p) = (median(&mut b), median(&mut p));
        println!(
            "| {entities} | {:.3} ms | {:.3} ms | {:+.1} % |",
            b * 1e3,
            p * 1e3,
            (p / b - 1.0) * 100.0
        );
        while bare.runner.world().next_frame() < next_frame(&app) {
            bare.frame();
        }
        while next_frame(&app) < bare.runner.world().next_frame() {
            app.update();
        }
        let m = app.world().resource::<AbilitiesMatch<ArenaGame>>();
        assert_eq!(
            m.world().checksum(),
            bare.runner.world().checksum(),
            "the plugin and the bare runner simulated the same frames"
        );
    }
}
