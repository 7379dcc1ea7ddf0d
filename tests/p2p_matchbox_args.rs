//! The `p2p_matchbox` example's command line, checked without a network (and without the
//! `matchbox` feature the example needs): its help, its ranges and its room addresses.

/// The `p2p_matchbox` example's command line (its parser, shared with the example through
/// `#[path]`: examples cannot be linked into tests).
#[path = "../examples/p2p_matchbox/args.rs"]
#[allow(dead_code)]
mod p2p_args;

use std::time::Duration;

/// `p2p_matchbox --help` is clap's help (it used to print "bad argument --help"), with every
/// bounded flag's range and every default; a value out of range is refused with its range; the
/// README's commands parse.
#[test]
fn p2p_matchbox_help_shows_ranges_and_defaults() {
    use clap::{CommandFactory, Parser, error::ErrorKind};
    use p2p_args::Cli;
    Cli::command().debug_assert();
    let help = Cli::command().render_long_help().to_string();
    for want in [
        "--serve <ADDR>",
        "--for <SECS>",
        "1 to 86400",
        "--room <URL>",
        "--players <N>",
        "2 to 8",
        "[default: 2]",
        "--frames <N>",
        "1 to 1000000",
        "[default: 600]",
        "--input-delay <FRAMES>",
        "0 to 15",
        "--timeout <SECS>",
        "1 to 3600",
        "[default: 90]",
        "whether they all agree",
        "Examples:",
    ] {
        assert!(help.contains(want), "{want:?} missing from:\n{help}");
    }
    let e = Cli::try_parse_from(["p2p_matchbox", "--help"]).unwrap_err();
    assert_eq!((e.kind(), e.exit_code()), (ErrorKind::DisplayHelp, 0));
    let e = Cli::try_parse_from(["p2p_matchbox", "--room", "ws://h:1/r", "--players", "9"])
        .unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("9 is not in 2..=8"), "{e}");
    let e = Cli::try_parse_from(["p2p_matchbox"]).unwrap_err();
    assert!(e.to_string().contains("--serve <ADDR>|--room <URL>"), "{e}");
    let e = Cli::try_parse_from(["p2p_matchbox", "--serve", "127.0.0.1:1", "--frames", "5"])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ArgumentConflict);

    // The commands of the README and of the help's examples.
    let serve = Cli::try_parse_from(["p2p_matchbox", "--serve", "127.0.0.1:3536"]).unwrap();
    assert_eq!(serve.serve, Some("127.0.0.1:3536".parse().unwrap()));
    assert_eq!(serve.lifetime(), None);
    let peer = Cli::try_parse_from(
        "p2p_matchbox --room ws://127.0.0.1:3536/duel --players 2 --frames 600".split(' '),
    )
    .unwrap();
    assert_eq!(peer.room.as_deref(), Some("ws://127.0.0.1:3536/duel"));
    assert_eq!((peer.players, peer.frames, peer.input_delay), (2, 600, 2));
    assert_eq!(peer.timeout(), Duration::from_secs(90));
    for line in help.lines().filter(|l| l.contains("--example p2p_matchbox -- ")) {
        let args = line.split(" -- ").nth(1).unwrap().split_whitespace();
        Cli::try_parse_from(std::iter::once("p2p_matchbox").chain(args))
            .unwrap_or_else(|e| panic!("{line}: {e}"));
    }
}

/// `--room` takes a WebSocket address: `http://`, `https://` and a bare address are refused
/// while parsing, saying what the flag takes (and the `ws://` form of an `http://` one),
/// instead of being retried until the timeout; `ws://` and `wss://` addresses parse.
#[test]
fn p2p_matchbox_room_takes_only_websocket_addresses() {
    use clap::Parser;
    use p2p_args::{Cli, room_url};
    for good in ["ws://127.0.0.1:3536/duel", "wss://example.org/room", "ws://h:1"] {
        assert_eq!(room_url(good).as_deref(), Ok(good));
        let cli = Cli::try_parse_from(["p2p_matchbox", "--room", good]).unwrap();
        assert_eq!(cli.room.as_deref(), Some(good));
    }
    let takes = "ws://HOST:PORT/ROOM or wss://HOST:PORT/ROOM";
    for (bad, hint) in [
        ("http://127.0.0.1:3536/duel", Some("did you mean ws://127.0.0.1:3536/duel?")),
        ("https://example.org/room", Some("did you mean wss://example.org/room?")),
        ("127.0.0.1:3536/duel", None),
        ("ws:///duel", None),
        ("ws://", None),
    ] {
        let e = room_url(bad).unwrap_err();
        assert!(e.contains(takes) && e.contains(bad), "{bad}: {e}");
        if let Some(hint) = hint {
            assert!(e.contains(hint), "{bad}: {e}");
        }
        let e = Cli::try_parse_from(["p2p_matchbox", "--room", bad]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let text = e.to_string();
        assert!(text.contains("--room <URL>") && text.contains(takes), "{bad}: {text}");
    }
}

/// `--rejoin LEAVE:BACK` takes two frames with LEAVE below BACK; anything else is refused
/// while parsing, saying what the flag takes.
#[test]
fn p2p_matchbox_rejoin_takes_two_frames_in_order() {
    use clap::Parser;
    use p2p_args::{Cli, rejoin_plan};
    assert_eq!(rejoin_plan("300:600"), Ok((300, 600)));
    let cli =
        Cli::try_parse_from(["p2p_matchbox", "--room", "ws://h:1/r", "--rejoin", "0:1"]).unwrap();
    assert_eq!(cli.rejoin, Some((0, 1)));
    // Either game takes it: the duel's peers come back into their slots as the brawl's do.
    let cli = Cli::try_parse_from([
        "p2p_matchbox",
        "--game",
        "duel",
        "--room",
        "ws://h:1/r",
        "--rejoin",
        "300:600",
    ])
    .unwrap();
    assert_eq!((cli.game, cli.rejoin), (p2p_args::GameKind::Duel, Some((300, 600))));
    for bad in ["600:300", "300:300", "300", "a:b", "300:", ":600", "-1:5"] {
        let e = rejoin_plan(bad).unwrap_err();
        assert!(e.contains("LEAVE:BACK"), "{bad}: {e}");
        let e = Cli::try_parse_from(["p2p_matchbox", "--room", "ws://h:1/r", "--rejoin", bad])
            .unwrap_err();
        assert_eq!(e.exit_code(), 2, "{bad}");
    }
    let e = Cli::try_parse_from(["p2p_matchbox", "--serve", "127.0.0.1:1", "--rejoin", "1:2"])
        .unwrap_err();
    assert_eq!(e.exit_code(), 2);
}
