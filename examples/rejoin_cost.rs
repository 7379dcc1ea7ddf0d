//! What a rejoin costs: a player crashes, comes back, and the members and it play on together.
//! Prints, per world, the snapshot size, the ticks (and emulated milliseconds) from the
//! restarted program's first tick to playing again, the ticks the members held, and the bytes
//! the rejoin protocol sent, on a perfect network, a lossy one, and a lossy one whose rejoin side
//! channel loses messages too (as UDP's does). `cargo run --profile test --example rejoin_cost`
//! (the figures are ticks and bytes of a seeded emulated match: the same in any build)

use rollback_abilities::session::{LocalMatch, MatchConfig, NetConditions, SessionEvent};
use rollback_abilities::{Game, World};
use rollback_abilities_kit::arena::{Arena, ArenaSpec};
use rollback_abilities_kit::duel;

fn measure<G: Game>(
    name: &str,
    players: usize,
    conditions: NetConditions,
    side: bool,
    make: impl Fn() -> World<G>,
) -> Result<(), Box<dyn std::error::Error>> {
    let config = MatchConfig { players, conditions, departure_ticks: 60, ..MatchConfig::default() };
    let mut m = LocalMatch::<G>::new(config, |_| make())?;
    m.synchronize()?;
    m.network().set_side_channel_impaired(side);
    let input = |_: usize, _: u32, _: &World<G>| G::Input::default();
    m.run(60, input)?;
    let leaver = players - 1;
    m.leave(leaver);
    for _ in 0..200 {
        m.tick(input, &mut [], |_| {})?;
    }
    let raw_before = m.network().stats().raw_bytes;
    m.rejoin(leaver, make())?;
    let mut ticks = 0u32;
    let mut held = 0u32;
    while m.peers()[leaver].is_rejoining() {
        let before = m.peers()[0].runner.world().next_frame();
        m.tick(input, &mut [], |_| {})?;
        if m.peers()[0].runner.world().next_frame() == before {
            held += 1;
        }
        ticks += 1;
        if ticks > 100_000 {
            return Err("the rejoin did not complete".into());
        }
    }
    let bytes = m.network().stats().raw_bytes - raw_before;
    let frame = m.peers()[leaver].events().iter().find_map(|e| match e {
        SessionEvent::Rejoined { frame, .. } => Some(*frame),
        _ => None,
    });
    let target = m.peers()[0].confirmed_frame().unwrap_or(0) + 120;
    m.run(target, input)?;
    let agree = m.confirmed_checksums_agree();
    println!(
        "{name:<12} players {players}  snapshot {:>9} B  to playing {ticks:>4} ticks ({:>5} ms)  members not advancing {held:>4} ticks  rejoin bytes {bytes:>9}  F {frame:?}  agree {agree}",
        make().snapshot_bytes(),
        u64::from(ticks) * config.tick_ms,
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let lossy = NetConditions {
        latency_ms: 10,
        jitter_ms: 30,
        loss_percent: 20,
        duplicate_percent: 5,
        reorder_percent: 5,
    };
    let networks = [
        ("perfect", NetConditions::PERFECT, false),
        ("lossy (GGRS traffic)", lossy, false),
        ("lossy (GGRS traffic and the rejoin side channel, as on UDP)", lossy, true),
    ];
    for (label, net, side) in networks {
        println!("network: {label}");
        measure("duel", 2, net, side, || duel::new_world(7, 2))?;
        measure("duel", 8, net, side, || duel::new_world(7, 8))?;
        let spec = ArenaSpec { entities: 256, ..ArenaSpec::default() };
        measure("arena-256", 2, net, side, || Arena::unwarmed(spec).world)?;
        measure("arena-256", 8, net, side, || Arena::unwarmed(spec).world)?;
    }
    Ok(())
}
