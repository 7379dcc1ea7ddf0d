//! Apps over real UDP sockets on 127.0.0.1 (`MatchSpec::p2p_udp`, `MatchSpec::spectator_udp`):
//! two players and a spectator, whose confirmed checksums equal bare runners'.

use crate::common::{app, confirmed_checksums, seen, state};
use crate::network::bare_checksums;
use bevy::app::App;
use bevy_rollback_abilities::{AbilitiesMatch, MatchSpec, NetSettings};
use ggrs::PlayerType;
use rollback_abilities::session::SessionEvent;
use rollback_abilities_kit::duel::Duel;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};

const SETTINGS: NetSettings =
    NetSettings { input_delay: 2, max_prediction: 8, desync_interval: 10, departure_ticks: 0 };

/// A UDP port free on 127.0.0.1 at the time of asking (the plugin binds it right after).
fn free_port() -> u16 {
    let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("a free port");
    s.local_addr().expect("its address").port()
}

/// The newest confirmed frame (-1 before the first, or before the match started).
fn confirmed(app: &App) -> i64 {
    app.world()
        .get_resource::<AbilitiesMatch<Duel>>()
        .and_then(|m| m.confirmed_frame())
        .map_or(-1, i64::from)
}

#[test]
fn two_players_and_a_spectator_over_udp_confirm_a_bare_runners_checksums() {
    const FRAMES: u32 = 300;
    let ports = [free_port(), free_port(), free_port()];
    let addr = |i: usize| SocketAddr::from((Ipv4Addr::LOCALHOST, ports[i]));
    let host = MatchSpec::p2p_udp(
        ports[0],
        vec![PlayerType::Local, PlayerType::Remote(addr(1)), PlayerType::Spectator(addr(2))],
    )
    .net(SETTINGS);
    let guest = MatchSpec::p2p_udp(ports[1], vec![PlayerType::Remote(addr(0)), PlayerType::Local])
        .net(SETTINGS);
    let watcher = MatchSpec::spectator_udp(ports[2], addr(0), 2).net(SETTINGS);
    let mut apps = [app(host), app(guest), app(watcher)];
    // Loopback delivers at once; GGRS resends what was sent before a peer's socket was bound
    // on its own clock, so the bound is in updates, generous, and never reached when it works.
    let mut updates = 0u32;
    while apps.iter().any(|a| confirmed(a) < i64::from(FRAMES)) {
        for a in &mut apps {
            a.update();
        }
        updates += 1;
        assert!(updates < 2_000_000, "the UDP match stalled");
    }
    let want = bare_checksums(FRAMES);
    for a in &apps {
        let got = confirmed_checksums(&state(a).runner());
        assert!(got.len() >= FRAMES as usize, "{} confirmed frames", got.len());
        assert_eq!(got[..FRAMES as usize], want[..], "{}", state(a).kind());
        assert!(seen(a).ended.is_empty(), "{:?}", seen(a).ended);
        assert_eq!(seen(a).desyncs, 0);
        assert!(seen(a).session.iter().any(|e| matches!(e, SessionEvent::Synchronized(_))));
    }
}
