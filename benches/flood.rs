//! The victim's CPU per tick under the worst flood the session guard lets through
//! (`docs/performance.md`): two duel peers on the emulated network, guarded but without keys
//! (assembled by hand from a `GuardedSocket`, `unguarded_builder` and `Runner::attach_guard`,
//! as `Peer::start` was before it authenticated every datagram; unpaced: GGRS's own traffic as
//! over a real socket); each tick player 1's address,
//! with its session number, sends peer 0 as many well-formed messages as its fair share allows
//! (`GuardConfig::flood_rate` per poll, less the honest traffic) — copies of a real input
//! message of player 1, quality reports (each answered by GGRS) and keep-alives in turn — so
//! they all reach GGRS and the flooder is never faulted. Only peer 0's `advance` is timed, against
//! the same tick with no flood, in the same run. The bench checks afterwards that the flood was
//! neither faulted nor dropped.
//!
//! The same, with every datagram authenticated (`Peer::start_keyed`, whose steady state is
//! `Peer::start`'s once the peers have introduced themselves): the quiet tick (what
//! sealing and opening the honest traffic costs), the member's allowed flood (sealed with its
//! own key: quality reports and keep-alives), and an off-path flood of 1,000 datagrams a tick
//! from player 1's address with its session number but no valid authenticator (each dropped
//! after one keyed hash, counted toward nobody).
//!
//! ```sh
//! cargo bench --bench flood
//! ```

use criterion::Criterion;
use ggrs::{Message, NonBlockingSocket, PlayerType};
use rollback_abilities::session::{
    EmulatedNetwork, EmulatedSocket, GuardConfig, GuardedSocket, Identity, MatchKeys,
    NetConditions, Peer, PeerAddr, SessionConfig, forge, unguarded_builder,
};
use rollback_abilities_kit::duel::{self, Duel, Input};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

thread_local! {
    static TIMES: RefCell<BTreeMap<&'static str, Vec<f64>>> = const { RefCell::new(BTreeMap::new()) };
}

/// Honest messages a tick from player 1 the flood leaves room for (its input, a resend, GGRS's
/// occasional quality report and keep-alive).
const HONEST: u32 = 4;

fn bot(player: usize, frame: u32) -> Input {
    Input {
        buttons: ((frame / 7 + player as u32) % 9) as u8,
        axis: ((frame % 200) as i32 - 100) as i8,
    }
}

/// A guarded peer without keys, assembled by hand with `SessionConfig::default()`'s settings.
fn without_keys(
    world: rollback_abilities::prelude::World<Duel>,
    socket: EmulatedSocket,
    players: impl Iterator<Item = (usize, PlayerType<PeerAddr>)>,
) -> Peer<Duel, PeerAddr> {
    let config = SessionConfig::default();
    let mut runner = config.runner(world);
    let players: Vec<_> = players.collect();
    let remotes = players.iter().filter_map(|(h, t)| match t {
        PlayerType::Remote(a) => Some((*a, vec![*h])),
        _ => None,
    });
    let (socket, guard) =
        GuardedSocket::new::<Input>(socket, GuardConfig::new(2, config.max_prediction), remotes);
    let mut builder =
        unguarded_builder(2, config.max_prediction, config.input_delay, config.desync_interval)
            .expect("a builder");
    for (handle, kind) in players {
        builder = builder.add_player(kind, handle).expect("a player");
    }
    let session = builder.start_p2p_session(socket).expect("a session");
    runner.attach_guard(guard.clone());
    Peer { runner, session, guard }
}

/// Two synchronised peers, 60 frames in, and a real input message of player 1 to peer 0.
struct Match {
    net: EmulatedNetwork,
    peers: Vec<Peer<Duel, PeerAddr>>,
    attacker: EmulatedSocket,
    captured: Message,
    flood_rate: u32,
    keyed: bool,
}

/// What a tick's flood is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flood {
    /// None.
    Quiet,
    /// The member's fair share, less its honest traffic.
    Allowance,
    /// 1,000 datagrams from the member's address without an authenticator.
    OffPath,
}

/// Datagrams an off-path flooder sends a tick.
const OFF_PATH: u32 = 1000;

impl Match {
    fn new(keyed: bool) -> Match {
        let net = EmulatedNetwork::new(NetConditions::PERFECT, 3);
        let ids: Vec<Identity> =
            (0..2).map(|_| Identity::generate().expect("randomness")).collect();
        let publics: Vec<_> = ids.iter().map(Identity::public).collect();
        let mut ids = ids.into_iter();
        let mut peers: Vec<Peer<Duel, PeerAddr>> = (0..2u16)
            .map(|i| {
                let keys = MatchKeys {
                    local: ids.next().expect("an identity"),
                    remotes: vec![(PeerAddr(1 - i), publics[usize::from(1 - i)])],
                };
                let players = (0..2u16).map(|j| {
                    let t =
                        if i == j { PlayerType::Local } else { PlayerType::Remote(PeerAddr(j)) };
                    (usize::from(j), t)
                });
                let world = duel::new_world(3, 2);
                let socket = net.socket(PeerAddr(i));
                if keyed {
                    Peer::start_keyed(world, socket, players, SessionConfig::default(), &keys)
                        .expect("a peer")
                } else {
                    without_keys(world, socket, players)
                }
            })
            .collect();
        // Poll every peer each round (`all` would stop at the first one not yet running).
        while peers.iter_mut().map(|p| p.synchronized()).filter(|ready| !ready).count() > 0 {
            net.advance_ms(5);
        }
        let mut m = Match {
            attacker: net.socket(PeerAddr(1)),
            net,
            peers,
            captured: forge::keep_alive(0),
            flood_rate: GuardConfig::new(2, 8).flood_rate,
            keyed,
        };
        for _ in 0..60 {
            m.tick(Flood::Quiet);
        }
        // Take what player 1 sent peer 0 off the network, keep an input message, pass it all on.
        let mut spy = m.net.socket(PeerAddr(0));
        m.peers[1].advance(&[(1, bot(1, 62))], None, |_| {}).expect("a tick");
        m.net.advance_ms(16);
        let sent = spy.receive_all_messages();
        m.captured = sent
            .iter()
            .map(|(_, msg)| msg)
            .find(|msg| format!("{msg:?}").contains("Input("))
            .expect("player 1 sent its input")
            .clone();
        for (_, msg) in &sent {
            m.attacker.send_to(msg, &PeerAddr(0));
        }
        m
    }

    /// One tick of both peers; returns the time of peer 0's advance.
    fn tick(&mut self, flood: Flood) -> Duration {
        let magic = self.peers[0].guard.remote_magic(&PeerAddr(1)).unwrap_or(0);
        match flood {
            Flood::Quiet => {}
            Flood::Allowance => {
                for k in 0..self.flood_rate - HONEST {
                    let msg = match k % 3 {
                        // A captured (sealed) message cannot be sent twice once keyed.
                        0 if !self.keyed => self.captured.clone(),
                        1 => forge::quality(magic, 0, 0),
                        _ => forge::keep_alive(magic),
                    };
                    // The member itself: sealed with its own key when keyed.
                    let msg = self.peers[1].guard.seal(&msg, &PeerAddr(0));
                    self.attacker.send_to(&msg, &PeerAddr(0));
                }
            }
            Flood::OffPath => {
                let msg = forge::keep_alive(magic);
                for _ in 0..OFF_PATH {
                    self.attacker.send_to(&msg, &PeerAddr(0));
                }
            }
        }
        let mut victim = Duration::ZERO;
        for (i, p) in self.peers.iter_mut().enumerate() {
            let f = p.runner.world().next_frame() + 2;
            let t = Instant::now();
            black_box(p.advance(&[(i, bot(i, f))], None, |_| {}).expect("a tick"));
            if i == 0 {
                victim = t.elapsed();
            }
        }
        self.net.advance_ms(16);
        victim
    }
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(40)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut g = c.benchmark_group("flood");
    let cases = [
        ("none", false, Flood::Quiet),
        ("allowance", false, Flood::Allowance),
        ("keyed none", true, Flood::Quiet),
        ("keyed allowance", true, Flood::Allowance),
        ("keyed off-path", true, Flood::OffPath),
    ];
    for (name, keyed, flood) in cases {
        let mut m = Match::new(keyed);
        let before = m.peers[0].guard.stats();
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += m.tick(flood);
                }
                TIMES.with(|t| {
                    t.borrow_mut()
                        .entry(name)
                        .or_default()
                        .push(total.as_nanos() as f64 / iters.max(1) as f64)
                });
                total
            })
        });
        let after = m.peers[0].guard.stats();
        assert_eq!(after.faults, before.faults, "{name}: the flood was faulted");
        let unauthenticated = after.unauthenticated - before.unauthenticated;
        assert_eq!(
            after.dropped - before.dropped,
            unauthenticated,
            "{name}: messages were dropped"
        );
        match flood {
            Flood::Allowance => {
                assert!(after.passed - before.passed > 1000, "{name}: the flood reached GGRS")
            }
            Flood::OffPath => assert!(unauthenticated > 1000, "{name}: the flood was read"),
            Flood::Quiet => {}
        }
    }
    g.finish();
    let median = |name| {
        TIMES.with(|t| {
            let mut v = t.borrow().get(name).cloned().unwrap_or_default();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        })
    };
    for (quiet, loud, what) in [
        ("none", "keyed none", "authenticating the honest traffic"),
        ("keyed none", "keyed allowance", "the member's allowed flood, keyed"),
        ("keyed none", "keyed off-path", "1,000 unauthenticated datagrams a tick"),
    ] {
        let (a, b) = (median(quiet), median(loud));
        println!(
            "{what}: {:.1} µs → {:.1} µs a tick (+{:.1} µs, {:.2} % of a 16.7 ms frame)",
            a / 1e3,
            b / 1e3,
            (b - a) / 1e3,
            (b - a) / 1e3 / 16_667.0 * 100.0
        );
    }
    let (quiet, flooded) = (median("none"), median("allowance"));
    println!(
        "victim's tick: {:.1} µs without a flood, {:.1} µs under the allowed flood ({} messages \
         a tick): {:.2}× (+{:.1} µs, {:.2} % of a 16.7 ms frame)",
        quiet / 1e3,
        flooded / 1e3,
        GuardConfig::new(2, 8).flood_rate - HONEST,
        flooded / quiet.max(1.0),
        (flooded - quiet) / 1e3,
        (flooded - quiet) / 1e3 / 16_667.0 * 100.0
    );
}
