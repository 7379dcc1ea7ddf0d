//! The page's URL parameters (`?room=duel&bot=1&frames=600…`), checked: a bad value is an error
//! that names the parameter and says what is allowed, shown on the page.

use rollback_abilities::num::Frame;
use rollback_abilities_kit::duel::{Input, MAX_FIGHTERS};

/// The most frames a match may be asked to play (`frames=`), as the duel allows.
pub const MAX_FRAMES: Frame = 1_000_000;

/// Seconds a returning page waits beyond the departure time by default
/// ([`Params::rejoin_limit_secs`]).
pub const REJOIN_GRACE_SECS: u32 = 10;

/// How the page plays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    /// The room (the signaling URL's path): letters, digits, `-` and `_`, at most 64.
    pub room: String,
    /// Players in the match, 2 to 4.
    pub players: usize,
    /// This tab is played by the duel's bot.
    pub bot: bool,
    /// Stop once this many frames are confirmed by every peer (`None`: play on).
    pub frames: Option<Frame>,
    /// The seed of the world and the bots (every peer must use the same).
    pub seed: u64,
    /// Scripted inputs instead of the keyboard or the bot.
    pub script: Option<Script>,
    /// The replay viewer instead of a match.
    pub replay_view: bool,
    /// GGRS input delay in frames, 0 to 15.
    pub input_delay: usize,
    /// The signaling server's room URL (`None`: the page's own host, same port).
    pub signal: Option<String>,
    /// Seconds to wait for the other players to join.
    pub wait_secs: u32,
    /// Seconds a silent player has before the others agree it left the match (a reloaded
    /// page can take its slot back from then on).
    pub departure_secs: u32,
    /// Seconds a page coming back into its match with a ticket waits without progress before
    /// it gives up and joins the room anew (`None`: [`Params::rejoin_limit_secs`]'s default).
    pub rejoin_secs: Option<u32>,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            room: "duel".into(),
            players: 2,
            bot: false,
            frames: None,
            seed: 1,
            script: None,
            replay_view: false,
            input_delay: 2,
            signal: None,
            wait_secs: 600,
            departure_secs: 10,
            rejoin_secs: None,
        }
    }
}

/// Scripted inputs: a pure function of the player and the frame, the same on every run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Script {
    /// Walks towards the middle and presses every button in turn (light, heavy, fireball,
    /// shield, sprint), a new one every 20 frames.
    Mash,
    /// Walks towards the middle and jabs.
    Jab,
    /// Stands still.
    Idle,
}

impl Script {
    /// Every script's name, for messages.
    pub const NAMES: &'static str = "mash, jab, idle";

    fn parse(name: &str) -> Option<Script> {
        match name {
            "mash" => Some(Script::Mash),
            "jab" => Some(Script::Jab),
            "idle" => Some(Script::Idle),
            _ => None,
        }
    }

    /// The input of `player` for `frame`.
    pub fn input(self, player: usize, frame: Frame) -> Input {
        // Player 0 starts on the left: the middle is to its right.
        let toward: i8 = if player.is_multiple_of(2) { 127 } else { -127 };
        match self {
            Script::Idle => Input::default(),
            Script::Jab => {
                if frame % 40 < 20 {
                    Input { buttons: 0, axis: toward }
                } else if frame % 10 < 4 {
                    Input { buttons: Input::LIGHT, axis: 0 }
                } else {
                    Input::default()
                }
            }
            Script::Mash => {
                let step = (frame / 20) % 8;
                let press = frame % 20 < 6;
                let tap = |b: u8| if press { b } else { 0 };
                match step {
                    0 | 1 => Input { buttons: 0, axis: toward },
                    2 => Input { buttons: tap(Input::LIGHT), axis: 0 },
                    3 => Input { buttons: tap(Input::HEAVY), axis: 0 },
                    4 => Input { buttons: tap(Input::FIREBALL), axis: 0 },
                    5 => Input { buttons: tap(Input::SHIELD), axis: 0 },
                    6 => Input { buttons: Input::SPRINT, axis: toward },
                    _ => Input { buttons: 0, axis: -toward / 2 },
                }
            }
        }
    }
}

impl Params {
    /// Parses the page's query string through `get` (the browser's `URLSearchParams.get`).
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<Params, String> {
        let mut p = Params::default();
        if let Some(room) = get("room") {
            let ok = !room.is_empty()
                && room.len() <= 64
                && room.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !ok {
                return Err(format!(
                    "room={room:?}: a room name is 1 to 64 letters, digits, '-' or '_'"
                ));
            }
            p.room = room;
        }
        if let Some(v) = get("players") {
            p.players = number(&v, "players", 2, MAX_FIGHTERS as u64)? as usize;
        }
        if let Some(v) = get("bot") {
            p.bot = flag(&v, "bot")?;
        }
        if let Some(v) = get("frames") {
            p.frames = Some(number(&v, "frames", 1, u64::from(MAX_FRAMES))? as Frame);
        }
        if let Some(v) = get("seed") {
            p.seed = number(&v, "seed", 0, u64::MAX)?;
        }
        if let Some(v) = get("script") {
            p.script = Some(Script::parse(&v).ok_or_else(|| {
                format!("script={v:?}: there is no such script (there are: {})", Script::NAMES)
            })?);
        }
        if let Some(v) = get("view") {
            match v.as_str() {
                "replay" => p.replay_view = true,
                "play" | "" => {}
                _ => return Err(format!("view={v:?}: the views are \"play\" and \"replay\"")),
            }
        }
        if let Some(v) = get("delay") {
            p.input_delay = number(&v, "delay", 0, 15)? as usize;
        }
        if let Some(v) = get("signal") {
            let ok = (v.starts_with("ws://") || v.starts_with("wss://")) && v.len() <= 512;
            if !ok {
                return Err(format!(
                    "signal={v:?}: give the signaling server's room URL, ws://HOST:PORT/ROOM"
                ));
            }
            p.signal = Some(v);
        }
        if let Some(v) = get("wait") {
            p.wait_secs = number(&v, "wait", 1, 86_400)? as u32;
        }
        if let Some(v) = get("departure") {
            p.departure_secs = number(&v, "departure", 1, 600)? as u32;
        }
        if let Some(v) = get("rejoin") {
            p.rejoin_secs = Some(number(&v, "rejoin", 1, 3600)? as u32);
        }
        Ok(p)
    }

    /// The frames the match plays for the duel's options (bots and scripts press nothing from
    /// then on): `frames=`, or the most a match may have.
    pub fn match_frames(&self) -> Frame {
        self.frames.unwrap_or(MAX_FRAMES)
    }

    /// Seconds a returning page waits without progress before it gives up: `rejoin=`, else
    /// the departure time plus [`REJOIN_GRACE_SECS`] (the others refuse its claim until they
    /// agree its player left; 20 s with the default departure time).
    pub fn rejoin_limit_secs(&self) -> u32 {
        self.rejoin_secs.unwrap_or(self.departure_secs.saturating_add(REJOIN_GRACE_SECS))
    }

    /// Who plays this tab, in words.
    pub fn controller(&self) -> &'static str {
        match (self.script, self.bot) {
            (Some(Script::Mash), _) => "script mash",
            (Some(Script::Jab), _) => "script jab",
            (Some(Script::Idle), _) => "script idle",
            (None, true) => "bot",
            (None, false) => "keyboard",
        }
    }
}

/// A whole number in `lo..=hi`.
fn number(v: &str, name: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match v.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("{name}={v:?}: expected a whole number from {lo} to {hi}")),
    }
}

/// `1`/`true`/`yes` or `0`/`false`/`no`.
fn flag(v: &str, name: &str) -> Result<bool, String> {
    match v.trim() {
        "1" | "true" | "yes" | "" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => Err(format!("{name}={v:?}: expected 1 or 0")),
    }
}
