//! The page: state, the frame loop and the JavaScript API (`web/app.js` puts these functions
//! on `window.duel`).
//!
//! One [`App`] lives in a thread-local (a page has one thread). `requestAnimationFrame` drives
//! it: each animation frame adds the elapsed time to an accumulator and runs as many fixed
//! 60 Hz ticks as it holds (at most [`MAX_TICKS_PER_FRAME`]; GGRS's wait recommendations take
//! time out of it), then draws. A background tab gets no animation frames, so a timer takes
//! over the ticks (without drawing) when none came for a while, and the match does not stall
//! for the other player.

use crate::cues::CueFx;
use crate::draw::{COLORS, HEIGHT, Hud, Ids, Painter, WIDTH, Who};
use crate::params::Params;
use crate::play::{self, Agreement, Local, Online, SUM_EVERY};
use crate::replay_view::{self, Viewer};
use js_sys::{Array, Object, Reflect};
use rollback_abilities::World;
use rollback_abilities::num::Frame;
use rollback_abilities::present::SoundCommand;
use rollback_abilities::session::matchbox::ConnectingMatch;
use rollback_abilities::session::{MatchboxOptions, PeerId, RejoinTicket, SessionConfig, Stage};
use rollback_abilities_kit::duel::{self, Duel, Input, MatchState};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// One simulation tick in milliseconds (60 Hz).
const TICK_MS: f64 = 1000.0 / 60.0;
/// The most ticks one animation frame runs (a longer gap is not caught up in a burst).
const MAX_TICKS_PER_FRAME: u32 = 4;
/// The most ticks one turn of the background timer runs (it comes every 100 ms, or once a
/// second where the browser slows a hidden tab's timers down).
const MAX_TICKS_PER_TIMER: u32 = 15;
/// After this long alone in the room, the page offers a local match against the bot (ms).
const ALONE_OFFER_MS: f64 = 6000.0;
/// Rendered frames the frame-time average covers.
const FRAME_TIME_WINDOW: usize = 240;

thread_local! {
    static APP: RefCell<Option<App>> = const { RefCell::new(None) };
}

/// What the page is doing.
enum Mode {
    /// Joining the room (or, with a ticket, coming back into its running match).
    Connecting { c: Box<ConnectingMatch<Duel>>, since: f64, alone_since: Option<f64> },
    /// An online match.
    Online(Box<Online>),
    /// A local match against the bot.
    Local(Box<Local>),
    /// The replay viewer.
    Replay(Option<Box<Viewer>>),
    /// Nothing more to do (an error, shown).
    Stopped,
}

/// The page's state.
struct App {
    params: Params,
    painter: Painter,
    keys: Rc<RefCell<BTreeSet<String>>>,
    mode: Mode,
    /// `loading`, `connecting`, `rejoining`, `playing`, `done`, `error` (the status API's
    /// `state`).
    state: &'static str,
    error: Option<String>,
    fx: CueFx,
    ids: Option<Ids>,
    notices: Vec<(String, f64)>,
    acc: f64,
    last_frame_at: Option<f64>,
    last_raf_at: f64,
    frame_times: Vec<f64>,
    frame_time_sum: f64,
    frames_drawn: u64,
    fps_marks: Vec<f64>,
    load_ms: f64,
    started_at: f64,
    connect_ms: Option<f64>,
    /// Whether the stage outlines the resolved boxes (`duel.setShowBoxes`); `None`: the mode's
    /// default (the replay viewer shows them, a match does not).
    boxes: Option<bool>,
    /// This page came with a ticket and asks to come back into its room's running match.
    from_ticket: bool,
    /// The slot addresses of the ticket this page stored last (`None`: none stored).
    ticket_addrs: Option<Vec<PeerId>>,
    /// When this page came back into the match (page clock, ms).
    rejoined_ms: Option<f64>,
    /// While this page comes back into its match: when it last made progress (page clock,
    /// ms) and where it was then (it had a peer id; state bytes received).
    returning: Option<(f64, bool, usize)>,
    /// Why this page gave up coming back into its match (then it joined the room anew).
    gave_up: Option<String>,
    /// Why this page dropped the ticket it found for its room without using it.
    ticket_dropped: Option<String>,
}

fn now() -> f64 {
    web_sys::window().and_then(|w| w.performance()).map_or(0.0, |p| p.now())
}

fn element(id: &str) -> Option<web_sys::Element> {
    web_sys::window()?.document()?.get_element_by_id(id)
}

fn set_text(id: &str, text: &str) {
    if let Some(e) = element(id) {
        e.set_text_content(Some(text));
    }
}

fn show(id: &str, visible: bool) {
    if let Some(e) = element(id) {
        let _ = if visible { e.remove_attribute("hidden") } else { e.set_attribute("hidden", "") };
    }
}

fn set(obj: &Object, key: &str, value: impl Into<JsValue>) {
    let _ = Reflect::set(obj, &JsValue::from_str(key), &value.into());
}

fn hex(sum: u64) -> String {
    format!("{sum:016x}")
}

/// The `sessionStorage` key of the ticket a page keeps for `room`.
fn ticket_key(room: &str) -> String {
    format!("rollback-duel-ticket:{room}")
}

/// The tab's `sessionStorage` (per tab and origin; it survives a reload).
fn session_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok()?
}

/// The ticket this tab kept for `room` (`Ok(None)`: none; `Err`: one that does not parse,
/// and why).
fn load_ticket(room: &str) -> Result<Option<RejoinTicket<PeerId>>, String> {
    let Some(text) = session_storage().and_then(|s| s.get_item(&ticket_key(room)).ok().flatten())
    else {
        return Ok(None);
    };
    ron::from_str(&text).map(Some).map_err(|e| e.to_string())
}

/// Why `ticket` cannot take this page back into a match of `players` players (`None`: it may).
fn ticket_unfit(ticket: &RejoinTicket<PeerId>, players: usize) -> Option<String> {
    if let Err(e) = ticket.check() {
        return Some(format!("it is not one a page could have written ({e})"));
    }
    (ticket.addrs.len() != players).then(|| {
        format!("it is for a {}-player match, this page plays {players}", ticket.addrs.len())
    })
}

/// `text` cut into lines of at most about `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Keeps `ticket` for `room` (it replaces the one kept before).
fn store_ticket(room: &str, ticket: &RejoinTicket<PeerId>) -> Result<(), String> {
    let text = ron::to_string(ticket).map_err(|e| e.to_string())?;
    let storage = session_storage().ok_or("no sessionStorage")?;
    storage.set_item(&ticket_key(room), &text).map_err(|_| "sessionStorage refused it".to_string())
}

/// Drops the ticket kept for `room`.
fn clear_ticket(room: &str) {
    if let Some(s) = session_storage() {
        let _ = s.remove_item(&ticket_key(room));
    }
}

/// The room URL: `signal=` or the page's own host (same port: the server routes WebSocket
/// upgrades to the signaling server).
fn room_url(params: &Params) -> Result<String, String> {
    if let Some(s) = &params.signal {
        return Ok(s.clone());
    }
    let location = web_sys::window().ok_or("no window")?.location();
    let host = location.host().map_err(|_| "cannot read the page's host")?;
    let scheme = match location.protocol() {
        Ok(p) if p == "https:" => "wss",
        _ => "ws",
    };
    Ok(format!("{scheme}://{host}/{}", params.room))
}

/// The keyboard's input for a person (see the page's controls).
fn keyboard_input(keys: &BTreeSet<String>) -> Input {
    let held = |codes: &[&str]| codes.iter().any(|c| keys.contains(*c));
    let left = held(&["ArrowLeft", "KeyA"]);
    let right = held(&["ArrowRight", "KeyD"]);
    let axis = match (left, right) {
        (true, false) => -127,
        (false, true) => 127,
        _ => 0,
    };
    let mut buttons = 0;
    for (codes, b) in [
        (&["KeyJ", "KeyZ"][..], Input::LIGHT),
        (&["KeyK", "KeyX"][..], Input::HEAVY),
        (&["KeyL", "KeyC"][..], Input::FIREBALL),
        (&["KeyI", "KeyS", "ArrowDown"][..], Input::SHIELD),
        (&["ShiftLeft", "ShiftRight"][..], Input::SPRINT),
    ] {
        if held(codes) {
            buttons |= b;
        }
    }
    Input { buttons, axis }
}

/// This tab's input for `player` in `frame`: the script's, the bot's (`None`) or the
/// keyboard's.
fn choose_input(
    params: &Params,
    keys: &RefCell<BTreeSet<String>>,
    frame: rollback_abilities::num::Frame,
    player: usize,
) -> Option<Input> {
    match params.script {
        Some(s) => Some(s.input(player, frame)),
        None if params.bot => None,
        None => Some(keyboard_input(&keys.borrow())),
    }
}

/// The keys the game uses (their default action, scrolling, is prevented).
fn game_key(code: &str) -> bool {
    matches!(
        code,
        "ArrowLeft"
            | "ArrowRight"
            | "ArrowDown"
            | "ArrowUp"
            | "Space"
            | "KeyA"
            | "KeyD"
            | "KeyJ"
            | "KeyK"
            | "KeyL"
            | "KeyI"
            | "KeyS"
            | "KeyZ"
            | "KeyX"
            | "KeyC"
    )
}

impl App {
    fn new(
        painter: Painter,
        params: Params,
        keys: Rc<RefCell<BTreeSet<String>>>,
        load_ms: f64,
    ) -> App {
        let fx = CueFx::new(duel::content());
        App {
            params,
            painter,
            keys,
            mode: Mode::Stopped,
            state: "loading",
            error: None,
            fx,
            ids: None,
            notices: Vec::new(),
            acc: 0.0,
            last_frame_at: None,
            last_raf_at: 0.0,
            frame_times: Vec::new(),
            frame_time_sum: 0.0,
            frames_drawn: 0,
            fps_marks: Vec::new(),
            load_ms,
            started_at: now(),
            connect_ms: None,
            boxes: None,
            from_ticket: false,
            ticket_addrs: None,
            rejoined_ms: None,
            returning: None,
            gave_up: None,
            ticket_dropped: None,
        }
    }

    fn fail(&mut self, message: String) {
        // A page that could not come back does not try again with the same ticket.
        if self.from_ticket && self.rejoined_ms.is_none() {
            clear_ticket(&self.params.room);
        }
        set_text("error", &message);
        show("error", true);
        show("local-bot", false);
        self.error = Some(message);
        self.state = "error";
        self.mode = Mode::Stopped;
    }

    fn notice(&mut self, text: String) {
        self.notices.push((text, now()));
        if self.notices.len() > 4 {
            self.notices.remove(0);
        }
    }

    /// Starts what the parameters ask for: the replay viewer, or joining the room.
    fn begin(&mut self) {
        if self.params.replay_view {
            self.mode = Mode::Replay(None);
            self.state = "done";
            show("replay-panel", true);
            return;
        }
        match self.connect() {
            Ok(c) => {
                self.state = if c.is_rejoin() { "rejoining" } else { "connecting" };
                self.returning = c.is_rejoin().then(|| (now(), false, 0));
                self.mode = Mode::Connecting { c: Box::new(c), since: now(), alone_since: None };
            }
            Err(e) => self.fail(e),
        }
    }

    /// Joins the room: at the start of a match, or, with a ticket this tab kept for the room
    /// (it was reloaded mid-match), back into the running match.
    fn connect(&mut self) -> Result<ConnectingMatch<Duel>, String> {
        let url = room_url(&self.params)?;
        let options = play::match_options(&self.params);
        options.validate().map_err(|e| e.to_string())?;
        let world = duel::try_new_world(options.seed, options.peers).map_err(|e| e.to_string())?;
        self.ids = Some(Ids::new(&world)?);
        let mut mo = MatchboxOptions::new(url, self.params.players);
        mo.peers_timeout = Duration::from_secs(u64::from(self.params.wait_secs));
        // The duel's session settings, with the page's departure time (60 ticks a second).
        mo.session = SessionConfig {
            departure_ticks: self.params.departure_secs.saturating_mul(60),
            ..options.session_config()
        };
        let at = Duration::from_secs_f64(now() / 1000.0);
        let ticket = match load_ticket(&self.params.room) {
            Ok(Some(t)) => match ticket_unfit(&t, self.params.players) {
                Some(why) => {
                    self.drop_ticket(why);
                    None
                }
                None => Some(t),
            },
            Ok(None) => None,
            Err(e) => {
                self.drop_ticket(format!("it cannot be read ({e})"));
                None
            }
        };
        match ticket {
            Some(ticket) => {
                self.from_ticket = true;
                ConnectingMatch::rejoin(&mo, world, ticket, at).map_err(|e| e.to_string())
            }
            None => ConnectingMatch::start(&mo, world, at).map_err(|e| e.to_string()),
        }
    }

    /// Drops the ticket kept for the room unused, and tells the player why.
    fn drop_ticket(&mut self, why: String) {
        clear_ticket(&self.params.room);
        let text = format!("Dropped the rejoin ticket this tab kept for the room: {why}");
        self.notice(text.clone());
        self.ticket_dropped = Some(text);
    }

    /// Whether this page is still coming back into its match, and for how long it may go on
    /// without progress: `Err(why)` once it has waited [`Params::rejoin_limit_secs`] since its
    /// last progress (a peer id from the signaling server, state bytes from the others).
    fn check_return(&mut self, t: f64) -> Result<(), String> {
        let Some((since, had_id, had_bytes)) = self.returning else { return Ok(()) };
        let (has_id, bytes) = match &self.mode {
            Mode::Connecting { c, .. } if c.is_rejoin() => (false, 0),
            Mode::Online(o) if o.is_rejoining() => (true, o.rejoin_progress.0),
            _ => {
                self.returning = None;
                return Ok(());
            }
        };
        if (has_id, bytes) != (had_id, had_bytes) {
            self.returning = Some((t, has_id, bytes));
            return Ok(());
        }
        let limit = self.params.rejoin_limit_secs();
        if t - since < f64::from(limit) * 1000.0 {
            return Ok(());
        }
        let why = match &self.mode {
            Mode::Online(o) => o.why_not_back(),
            _ => "the signaling server gave this page no peer id".to_string(),
        };
        Err(format!("{why}; nothing moved for {limit} s"))
    }

    /// Stops coming back into the match: leaves the room, drops the ticket, tells the player
    /// why and joins the room anew, as a page without a ticket does.
    fn give_up(&mut self, why: &str) {
        if let Mode::Online(o) = &mut self.mode {
            o.close();
        }
        self.mode = Mode::Stopped;
        clear_ticket(&self.params.room);
        self.ticket_addrs = None;
        self.from_ticket = false;
        self.returning = None;
        let text = format!("Could not get back into the match: {why}.");
        self.notice(format!("{text} Joining the room anew."));
        self.gave_up = Some(text);
        self.fx.clear();
        self.acc = 0.0;
        self.begin();
    }

    /// Switches to a local match against the bot (from the "alone in the room" offer).
    fn play_local(&mut self) -> Result<(), String> {
        if matches!(self.mode, Mode::Online(_) | Mode::Replay(_)) {
            return Err("a match is already on".into());
        }
        let local = Local::new(&self.params)?;
        if let Some(w) = local.world() {
            self.ids = Some(Ids::new(w)?);
        }
        self.mode = Mode::Local(Box::new(local));
        self.fx.clear();
        self.state = "playing";
        self.error = None;
        self.acc = 0.0;
        show("local-bot", false);
        show("error", false);
        Ok(())
    }

    /// One animation frame (or a timer's turn in a background tab: `draw` false).
    fn frame(&mut self, t: f64, draw: bool) {
        let start = now();
        let dt = self.last_frame_at.map_or(0.0, |l| (t - l).clamp(0.0, 250.0));
        self.last_frame_at = Some(t);
        self.fx.now = t;
        self.acc += dt;
        self.update(t, if draw { MAX_TICKS_PER_FRAME } else { MAX_TICKS_PER_TIMER });
        if draw {
            self.draw(t);
            let spent = now() - start;
            self.frames_drawn += 1;
            self.frame_time_sum += spent;
            self.frame_times.push(spent);
            if self.frame_times.len() > FRAME_TIME_WINDOW {
                self.frame_times.remove(0);
            }
            self.fps_marks.push(t);
            self.fps_marks.retain(|m| t - m <= 1000.0);
        }
    }

    fn update(&mut self, t: f64, max_ticks: u32) {
        let mut next: Option<Mode> = None;
        let mut failure: Option<String> = None;
        let mut notices = Vec::new();
        match &mut self.mode {
            Mode::Connecting { c, since, alone_since } => {
                self.acc = 0.0;
                match c.poll(Duration::from_secs_f64(t / 1000.0)) {
                    Ok(Some(peer)) => match Online::new(peer, &self.params) {
                        Ok(o) => {
                            self.connect_ms = Some(t - self.started_at);
                            next = Some(Mode::Online(Box::new(o)));
                        }
                        Err(e) => failure = Some(e),
                    },
                    Ok(None) => {
                        let alone = c.stage() == Some(Stage::Peers) && c.connected_peers() == 0;
                        if !alone {
                            *alone_since = None;
                        } else if alone_since.is_none() {
                            *alone_since = Some(t);
                        }
                        let offer = alone_since.is_some_and(|a| t - a >= ALONE_OFFER_MS)
                            && t - *since >= ALONE_OFFER_MS;
                        show("local-bot", offer);
                    }
                    Err(e) => failure = Some(format!("cannot join the room: {e}")),
                }
            }
            Mode::Online(o) => {
                let mut ticks = 0;
                let (params, keys, player) = (&self.params, &self.keys, o.player());
                let mut from_page =
                    |f: Frame| choose_input(params, keys, f, player).unwrap_or_default();
                let by_bot = params.script.is_none() && params.bot;
                while self.acc >= TICK_MS && ticks < max_ticks && !o.finished {
                    let input: Option<&mut dyn FnMut(Frame) -> Input> =
                        if by_bot { None } else { Some(&mut from_page) };
                    self.fx.set_frame(o.world().next_frame());
                    match o.tick(input, &mut self.fx, params.frames, t) {
                        Ok(r) => {
                            self.acc -= TICK_MS * (1.0 + f64::from(r.wait_frames));
                            notices.extend(r.notices);
                        }
                        Err(e) => {
                            failure = Some(e);
                            break;
                        }
                    }
                    ticks += 1;
                }
                if self.acc > TICK_MS * f64::from(max_ticks) * 2.0 {
                    self.acc = 0.0; // far behind (a stall): no burst to catch up
                }
                if o.is_rejoining() {
                    self.state = "rejoining";
                } else if self.state == "rejoining" {
                    self.state = "playing";
                }
                if o.net.came_back_at().is_some() && self.rejoined_ms.is_none() {
                    self.rejoined_ms = Some(t - self.started_at);
                }
                // The ticket to come back with after a reload: kept while the match runs, taken
                // again when a rejoin moved a slot, dropped when the match is over.
                if o.finished {
                    if self.ticket_addrs.take().is_some() {
                        clear_ticket(&self.params.room);
                    }
                } else if !o.is_rejoining() {
                    let addrs = o.net.peer().slot_addresses();
                    if self.ticket_addrs.as_deref() != Some(addrs) {
                        match store_ticket(&self.params.room, &o.net.peer().ticket()) {
                            Ok(()) => self.ticket_addrs = Some(addrs.to_vec()),
                            Err(e) => notices.push(format!("cannot keep the rejoin ticket: {e}")),
                        }
                    }
                }
                if o.finished && self.state == "playing" {
                    self.state = "done";
                }
            }
            Mode::Local(l) => {
                let mut ticks = 0;
                while self.acc >= TICK_MS && ticks < max_ticks {
                    let frame =
                        l.world().map_or(0, |w| w.next_frame()) + self.params.input_delay as u32;
                    let input = choose_input(&self.params, &self.keys, frame, 0);
                    self.fx.set_frame(l.world().map_or(0, |w| w.next_frame()));
                    if let Err(e) = l.tick(input, &mut self.fx) {
                        failure = Some(e);
                        break;
                    }
                    self.acc -= TICK_MS;
                    ticks += 1;
                }
                if self.acc > TICK_MS * f64::from(max_ticks) * 2.0 {
                    self.acc = 0.0;
                }
                if self.params.frames.is_some() && l.final_checksum.is_some() {
                    self.state = "done";
                }
            }
            Mode::Replay(Some(v)) => {
                let mut ticks = 0;
                while self.acc >= TICK_MS && ticks < max_ticks {
                    if v.playing {
                        self.fx.set_frame(v.world().next_frame());
                        v.step(&mut self.fx);
                    }
                    self.acc -= TICK_MS;
                    ticks += 1;
                }
                if self.acc > TICK_MS * f64::from(max_ticks) * 2.0 {
                    self.acc = 0.0;
                }
            }
            Mode::Replay(None) | Mode::Stopped => self.acc = 0.0,
        }
        for n in notices {
            self.notice(n);
        }
        if let Some(m) = next {
            let rejoining = matches!(&m, Mode::Online(o) if o.is_rejoining());
            self.mode = m;
            self.state = if rejoining { "rejoining" } else { "playing" };
            self.fx.clear();
            show("local-bot", false);
        }
        if let Some(e) = failure {
            if self.returning.is_some() {
                self.give_up(&e);
            } else {
                self.fail(e);
            }
        }
        if let Err(why) = self.check_return(t) {
            self.give_up(&why);
        }
        self.fx.expire();
        self.notices.retain(|(_, at)| t - at < 6000.0);
    }

    fn who(&self, players: usize, me: Option<usize>, local: bool) -> Vec<Who> {
        (0..players)
            .map(|p| {
                let role = if Some(p) == me {
                    format!("you ({})", self.params.controller())
                } else if local {
                    "bot".to_string()
                } else {
                    "remote".to_string()
                };
                Who { name: format!("P{p} · {role}") }
            })
            .collect()
    }

    /// When a returning page gives up, in words.
    fn give_up_line(&self) -> String {
        format!(
            "gives up and joins the room anew after {} s without progress",
            self.params.rejoin_limit_secs()
        )
    }

    fn agreement_line(a: &Agreement) -> (String, &'static str) {
        match (a.first_mismatch, a.last_frame) {
            (Some((f, p, ours, theirs)), _) => (
                format!(
                    "checksums DISAGREE at frame {f} with P{p}: {} vs {}",
                    hex(ours),
                    hex(theirs)
                ),
                "#ff5d73",
            ),
            (None, Some(f)) => {
                (format!("checksums agree: {} checks, last after frame {f}", a.agreed), "#80ed99")
            }
            (None, None) => {
                (format!("checksums: first check after frame {}", SUM_EVERY - 1), "#c9cce0")
            }
        }
    }

    fn perf_line(&self) -> String {
        format!("frame time {:.2} ms · {} fps", self.recent_frame_time(), self.fps_marks.len())
    }

    /// The cue counters, in words that add up: every hit shown is confirmed, taken back by a
    /// rollback, or not confirmed yet.
    fn cue_line(&self) -> String {
        let c = &self.fx.counts;
        format!(
            "cues {} = {}✓ + {}✗ taken back + {} pending · auras {} ({}✗)",
            c.played,
            c.confirmed,
            c.cancelled,
            c.pending(),
            c.lasting,
            c.lasting_mispredicted
        )
    }

    fn recent_frame_time(&self) -> f64 {
        if self.frame_times.is_empty() {
            0.0
        } else {
            self.frame_times.iter().sum::<f64>() / self.frame_times.len() as f64
        }
    }

    fn draw(&mut self, t: f64) {
        let p = &self.painter;
        let Some(ids) = &self.ids else {
            if matches!(self.mode, Mode::Replay(None)) {
                p.message(
                    "Replay viewer",
                    &["Open a .replay file (from the duel's --replay, or saved here) below."
                        .into()],
                    "#e9ecff",
                    t,
                );
            } else if let Some(e) = &self.error {
                p.message("Something went wrong", std::slice::from_ref(e), "#ff5d73", t);
            }
            return;
        };
        let banner_notice = self.notices.last().map(|(n, _)| (n.clone(), "#ffd166"));
        match &self.mode {
            Mode::Connecting { c, since, .. } if c.is_rejoin() => {
                let waited = format!("{:.0} s", (t - since) / 1000.0);
                let lines = [
                    format!("Coming back into the match in room \"{}\"…", self.params.room),
                    waited,
                    self.give_up_line(),
                ];
                p.message("Rejoining the duel", &lines, "#e9ecff", t);
            }
            Mode::Online(o) if o.is_rejoining() => {
                let (got, size) = o.net.peer().rejoin_progress();
                let progress = if size == 0 {
                    "Rejoining… (asking the others to let this page back in)".to_string()
                } else {
                    format!("Rejoining… ({got}/{size} bytes)")
                };
                let refused = format!(
                    "the others let a slot be taken back once they agree its player left \
                     ({} s); asked {} time(s) so far",
                    self.params.departure_secs, o.rejoin_refusals
                );
                let lines = [progress, refused, self.give_up_line()];
                p.message("Rejoining the duel", &lines, "#e9ecff", t);
            }
            Mode::Connecting { c, since, .. } => {
                let stage = match c.stage() {
                    Some(Stage::Peers) => format!(
                        "Waiting for {} more player(s) in room \"{}\" — open this page in another window",
                        self.params.players.saturating_sub(1 + c.connected_peers()),
                        self.params.room
                    ),
                    Some(Stage::Handshake) => "Checking that both sides run the same game…".into(),
                    Some(Stage::Synchronize) => "Synchronising with GGRS…".into(),
                    None => "Connecting…".into(),
                };
                let waited = format!("{:.0} s", (t - since) / 1000.0);
                let mut lines = vec![stage, waited];
                // Why this page is here rather than back in its match.
                for told in [&self.gave_up, &self.ticket_dropped].into_iter().flatten() {
                    lines.push(String::new());
                    lines.extend(wrap(told, 90));
                }
                if self.gave_up.is_some() {
                    lines.push("This page joined the room anew, as a new player.".into());
                }
                p.message("Joining the duel", &lines, "#e9ecff", t);
            }
            Mode::Online(o) => {
                let w = o.world();
                let me = o.player();
                let stats = o.net.peer().runner.stats();
                let mut hud = Hud {
                    who: self.who(w.players(), Some(me), false),
                    show_boxes: self.boxes.unwrap_or(false),
                    ..Hud::default()
                };
                let confirmed = o.confirmed();
                hud.net = vec![
                    (
                        format!(
                            "NET  ping {} · advantage {} · delay {}",
                            o.ping_ms.map_or("–".into(), |p| format!("{p} ms")),
                            o.frame_advantage.map_or("–".into(), |a| format!("{a:+}")),
                            self.params.input_delay
                        ),
                        "#e9ecff",
                    ),
                    (
                        format!(
                            "frame {} · confirmed {} · rollbacks {} (max {}) · desyncs {}",
                            w.next_frame(),
                            confirmed as i64 - 1,
                            stats.rollbacks,
                            stats.max_rollback,
                            stats.desyncs
                        ),
                        "#c9cce0",
                    ),
                    Self::agreement_line(&o.agreement),
                    (self.cue_line(), "#9aa0bc"),
                    (self.perf_line(), "#9aa0bc"),
                ];
                if let Some(f) = o.net.came_back_at() {
                    hud.net.push((format!("came back into the match at frame {f}"), "#9aa0bc"));
                }
                if let Some(sum) = o.final_checksum {
                    hud.net.push((format!("final checksum {}", hex(sum)), "#ffd166"));
                }
                hud.subtitle =
                    Some(format!("room \"{}\" · seed {}", self.params.room, self.params.seed));
                hud.banner = if o.finished {
                    let who = match w.players() {
                        2 => "both players".to_string(),
                        n => format!("all {n} players"),
                    };
                    Some((format!("All frames played — {who} confirmed every one"), "#80ed99"))
                } else {
                    banner_notice
                };
                p.world(w, ids, &self.fx, &hud);
            }
            Mode::Local(l) => {
                let Some(w) = l.world() else { return };
                let stats = l.m.peers().first().map(|p| p.runner.stats()).unwrap_or_default();
                let mut hud = Hud {
                    who: self.who(w.players(), Some(0), true),
                    show_boxes: self.boxes.unwrap_or(false),
                    ..Hud::default()
                };
                hud.net = vec![
                    ("LOCAL  vs the bot over an emulated 80 ms network".into(), "#e9ecff"),
                    (
                        format!(
                            "frame {} · rollbacks {} (max {})",
                            w.next_frame(),
                            stats.rollbacks,
                            stats.max_rollback
                        ),
                        "#c9cce0",
                    ),
                    Self::agreement_line(&l.agreement),
                    (self.cue_line(), "#9aa0bc"),
                    (self.perf_line(), "#9aa0bc"),
                ];
                hud.subtitle = Some(format!("local match · seed {}", self.params.seed));
                hud.banner = banner_notice;
                p.world(w, ids, &self.fx, &hud);
            }
            Mode::Replay(Some(v)) => {
                let w = v.world();
                let mut hud = Hud {
                    who: (0..w.players()).map(|p| Who { name: format!("P{p}") }).collect(),
                    show_boxes: self.boxes.unwrap_or(true),
                    ..Hud::default()
                };
                let frame = v.frame().map_or("start".into(), |f| format!("after frame {f}"));
                let check = match v.recorded_checksum() {
                    Some(0) | None => ("no recorded checksum".to_string(), "#9aa0bc"),
                    Some(r) if r == w.checksum() => {
                        (format!("checksum {} ✓ as recorded", hex(r)), "#80ed99")
                    }
                    Some(r) => {
                        (format!("checksum {} ≠ recorded {}", hex(w.checksum()), hex(r)), "#ff5d73")
                    }
                };
                hud.net = vec![
                    (
                        format!("REPLAY  {frame} of {} · {} keyframes", v.frames(), v.keyframes()),
                        "#e9ecff",
                    ),
                    check,
                    (if v.playing { "playing".into() } else { "paused".into() }, "#c9cce0"),
                    (self.perf_line(), "#9aa0bc"),
                ];
                p.world(w, ids, &self.fx, &hud);
            }
            Mode::Replay(None) | Mode::Stopped => {
                if let Some(e) = &self.error {
                    p.message("Something went wrong", std::slice::from_ref(e), "#ff5d73", t);
                }
            }
        }
    }

    /// The status's rejoin fields: `rejoined_at` (the frame F this page came back into the
    /// match at, or null), `rejoin_ms` (page clock when it did), `rejoin_bytes` and
    /// `rejoin_size` (the state received while coming back), `rejoin_refusals` (claims the
    /// others refused), `returns` (`[players, F]` of every return this page saw, its own
    /// included), `left` (players out of the match now), `rejoin_gave_up` (why this page
    /// gave up coming back, or null), `ticket_dropped` (why it dropped the ticket it found
    /// unused, or null) and `rejoin_limit_s` (seconds without progress it gives up after).
    fn rejoin_status(&self, o: &Object) {
        let online = match &self.mode {
            Mode::Online(on) => Some(on),
            _ => None,
        };
        let back = online.and_then(|on| on.net.came_back_at());
        set(o, "rejoined_at", back.map_or(JsValue::NULL, JsValue::from));
        set(o, "rejoin_ms", self.rejoined_ms.map_or(JsValue::NULL, JsValue::from));
        let (got, size) = online.map_or((0, 0), |on| on.rejoin_progress);
        set(o, "rejoin_bytes", got as f64);
        set(o, "rejoin_size", size as f64);
        set(o, "rejoin_refusals", online.map_or(0.0, |on| on.rejoin_refusals as f64));
        let returns = Array::new();
        let left = Array::new();
        if let Some(on) = online {
            for (players, f) in &on.rejoined {
                let ps: Array = players.iter().map(|p| JsValue::from(*p as u32)).collect();
                returns.push(&Array::of2(&ps, &JsValue::from(*f)));
            }
            for p in &on.left {
                left.push(&JsValue::from(*p as u32));
            }
        }
        set(o, "returns", returns);
        set(o, "left", left);
        let text = |t: &Option<String>| t.clone().map_or(JsValue::NULL, JsValue::from);
        set(o, "rejoin_gave_up", text(&self.gave_up));
        set(o, "ticket_dropped", text(&self.ticket_dropped));
        set(o, "rejoin_limit_s", self.params.rejoin_limit_secs());
    }

    fn world(&self) -> Option<&World<Duel>> {
        match &self.mode {
            Mode::Online(o) => Some(o.world()),
            Mode::Local(l) => l.world(),
            Mode::Replay(Some(v)) => Some(v.world()),
            _ => None,
        }
    }

    fn status(&self) -> Object {
        let o = Object::new();
        set(&o, "state", self.state);
        set(&o, "error", self.error.clone().map_or(JsValue::NULL, JsValue::from));
        set(
            &o,
            "mode",
            match self.mode {
                Mode::Connecting { .. } => "connecting",
                Mode::Online(_) => "online",
                Mode::Local(_) => "local",
                Mode::Replay(_) => "replay",
                Mode::Stopped => "stopped",
            },
        );
        let sums = Array::new();
        let (player, frame, confirmed, rollbacks, desyncs, final_sum, agreement) = match &self.mode
        {
            Mode::Online(o) => {
                let s = o.net.peer().runner.stats();
                (
                    Some(o.player()),
                    o.world().next_frame(),
                    i64::from(o.confirmed()) - 1,
                    s.rollbacks,
                    s.desyncs,
                    o.final_checksum,
                    Some(&o.agreement),
                )
            }
            Mode::Local(l) => {
                let p0 = l.m.peers().first();
                let s = p0.map(|p| p.runner.stats()).unwrap_or_default();
                let c = p0.and_then(|p| p.runner.recorder()).map_or(0, |r| r.next_frame());
                (
                    Some(0),
                    l.world().map_or(0, |w| w.next_frame()),
                    i64::from(c) - 1,
                    s.rollbacks,
                    s.desyncs,
                    l.final_checksum,
                    Some(&l.agreement),
                )
            }
            _ => (None, 0, -1, 0, 0, None, None),
        };
        if let Some(a) = agreement {
            for (f, sum) in &a.mine {
                sums.push(&Array::of2(&JsValue::from(*f), &JsValue::from(hex(*sum))));
            }
            set(&o, "checksum_checks", a.agreed as f64);
            set(&o, "checksum_mismatches", a.mismatches as f64);
            set(
                &o,
                "checksums_agree",
                if a.last_frame.is_none() {
                    JsValue::NULL
                } else {
                    JsValue::from(a.mismatches == 0)
                },
            );
        }
        set(&o, "player", player.map_or(JsValue::NULL, |p| JsValue::from(p as u32)));
        set(&o, "frame", frame);
        set(&o, "confirmed_frame", confirmed as f64);
        set(&o, "rollbacks", rollbacks as f64);
        set(&o, "desyncs", desyncs as f64);
        set(&o, "final_checksum", final_sum.map_or(JsValue::NULL, |s| JsValue::from(hex(s))));
        set(&o, "checksums", sums);
        let (ping, adv) = match &self.mode {
            Mode::Online(on) => (on.ping_ms, on.frame_advantage),
            _ => (None, None),
        };
        set(&o, "ping_ms", ping.map_or(JsValue::NULL, |p| JsValue::from(p as f64)));
        self.rejoin_status(&o);
        set(&o, "frame_advantage", adv.map_or(JsValue::NULL, JsValue::from));
        let avg = if self.frames_drawn == 0 {
            0.0
        } else {
            self.frame_time_sum / self.frames_drawn as f64
        };
        set(&o, "frame_time_ms", avg);
        set(&o, "frame_time_recent_ms", self.recent_frame_time());
        set(&o, "frames_drawn", self.frames_drawn as f64);
        set(&o, "fps", self.fps_marks.len() as u32);
        set(&o, "load_ms", self.load_ms);
        set(&o, "connect_ms", self.connect_ms.map_or(JsValue::NULL, JsValue::from));
        let c = &self.fx.counts;
        set(&o, "cues_played", c.played as f64);
        set(&o, "cues_cancelled", c.cancelled as f64);
        set(&o, "cues_confirmed", c.confirmed as f64);
        set(&o, "cues_pending", c.pending() as f64);
        set(&o, "cues_lasting", c.lasting as f64);
        set(&o, "cues_lasting_mispredicted", c.lasting_mispredicted as f64);
        let sounds = Array::new();
        for cmd in self.fx.sounds.log() {
            sounds.push(&sound_object(cmd, None));
        }
        set(&o, "sound_log", sounds);
        let drawn = self.painter.drawn.borrow();
        let texts = Array::new();
        for t in &drawn.texts {
            let b = Array::new();
            for v in [t.x0, t.y0, t.x1, t.y1] {
                b.push(&JsValue::from(v));
            }
            let e = Object::new();
            set(&e, "text", t.text.as_str());
            set(&e, "box", b);
            texts.push(&e);
        }
        set(&o, "texts", texts);
        let fighters = Array::new();
        for f in &drawn.fighters {
            let e = Object::new();
            set(&e, "player", f.player as u32);
            set(&e, "x0", f.x0);
            set(&e, "x1", f.x1);
            set(&e, "label_x0", f.label.0);
            set(&e, "label_x1", f.label.1);
            fighters.push(&e);
        }
        set(&o, "fighters", fighters);
        drop(drawn);
        if let Some(w) = self.world() {
            set(&o, "match", match_object(w));
        }
        set(&o, "room", self.params.room.as_str());
        set(&o, "controller", self.params.controller());
        o
    }
}

/// A sound command as a JavaScript object: `op` (`start`, `skip`, `fade`, `stop`), `id` (the
/// cue key), `frame` (the cue's), `offset`/`fade` in frames, `looped`, and `sound` if given.
fn sound_object(cmd: &SoundCommand, sound: Option<&str>) -> Object {
    let o = Object::new();
    let key = cmd.key();
    let id = format!(
        "{}:{}:{}:{:?}:{}.{}.{}:{}",
        key.frame,
        key.target.index,
        key.tag.0,
        key.kind,
        key.origin.kind,
        key.origin.a,
        key.origin.b,
        key.ordinal
    );
    set(&o, "id", id);
    set(&o, "frame", key.frame);
    let (op, offset, fade, looped) = match *cmd {
        SoundCommand::Start { offset, looped, .. } => ("start", offset, 0, looped),
        SoundCommand::Skip { late, .. } => ("skip", late, 0, false),
        SoundCommand::Fade { frames, .. } => ("fade", 0, frames, false),
        SoundCommand::Stop { .. } => ("stop", 0, 0, false),
    };
    set(&o, "op", op);
    set(&o, "offset", offset);
    set(&o, "fade", fade);
    set(&o, "looped", looped);
    if let Some(s) = sound {
        set(&o, "sound", s);
    }
    o
}

/// Where the match stands, for `status().match`: `state` (`fighting`, `round_over`,
/// `match_over`), `round`, `best_of`, `wins`, `frames_left`, `winner` (a player, or null for a
/// draw or while undecided), `decided_by` (a decided round: `knockout` or `time`),
/// `rematch_open`, `rematch_asked`, `matches`.
fn match_object(w: &World<Duel>) -> Object {
    let o = Object::new();
    let g = w.global();
    let wins = Array::new();
    for p in 0..w.players().min(duel::MAX_FIGHTERS) {
        wins.push(&JsValue::from(g.wins[p]));
    }
    set(&o, "wins", wins);
    set(&o, "round", g.round);
    set(&o, "best_of", duel::BEST_OF);
    set(&o, "matches", g.matches);
    let winner = |p: Option<usize>| p.map_or(JsValue::NULL, |p| JsValue::from(p as u32));
    match duel::match_state(w) {
        MatchState::Fighting { frames_left, .. } => {
            set(&o, "state", "fighting");
            set(&o, "frames_left", frames_left);
            set(&o, "winner", JsValue::NULL);
        }
        MatchState::RoundOver { winner: p } => {
            set(&o, "state", "round_over");
            set(&o, "winner", winner(p));
            // A round ends on its clock or earlier, by a knock-out.
            let by_time = g.ko_frame.saturating_sub(g.round_start) >= duel::ROUND_FRAMES;
            set(&o, "decided_by", if by_time { "time" } else { "knockout" });
        }
        MatchState::MatchOver { winner: p, rematch_open, asked } => {
            set(&o, "state", "match_over");
            set(&o, "winner", winner(p));
            set(&o, "rematch_open", rematch_open);
            set(&o, "rematch_asked", asked);
        }
    }
    o
}

/// Runs `f` on the app, or says why it cannot.
fn with_app<T>(f: impl FnOnce(&mut App) -> Result<T, String>) -> Result<T, JsValue> {
    APP.with(|cell| match cell.try_borrow_mut() {
        Ok(mut guard) => match guard.as_mut() {
            Some(app) => f(app).map_err(|e| JsValue::from(js_sys::Error::new(&e))),
            None => Err(js_sys::Error::new("the duel has not started (call start first)").into()),
        },
        Err(_) => {
            Err(js_sys::Error::new("the duel is busy (called from inside its own frame)").into())
        }
    })
}

/// Shows a panic on the page and in `window.duelPanic` (the wasm instance cannot go on).
fn panic_hook(info: &std::panic::PanicHookInfo<'_>) {
    let message = format!("the page's program stopped: {info}");
    set_text("error", &message);
    show("error", true);
    if let Some(w) = web_sys::window() {
        let _ = Reflect::set(&w, &JsValue::from_str("duelPanic"), &JsValue::from_str(&message));
    }
}

/// Starts the page: reads the URL's parameters, sets up the canvas and the keyboard, begins
/// connecting (or opens the replay viewer) and starts the frame loop. `load_ms` is how long the
/// page took to load the program (measured by `app.js`).
#[wasm_bindgen]
pub fn start(load_ms: f64) -> Result<(), JsValue> {
    std::panic::set_hook(Box::new(panic_hook));
    let window = web_sys::window().ok_or("no window")?;
    let document = window.document().ok_or("no document")?;
    let canvas: web_sys::HtmlCanvasElement = document
        .get_element_by_id("stage")
        .ok_or("the page has no canvas #stage")?
        .dyn_into()
        .map_err(|_| "#stage is not a canvas")?;
    let dpr = window.device_pixel_ratio().clamp(1.0, 3.0);
    canvas.set_width((WIDTH * dpr) as u32);
    canvas.set_height((HEIGHT * dpr) as u32);
    let ctx: web_sys::CanvasRenderingContext2d = canvas
        .get_context("2d")?
        .ok_or("no 2d context")?
        .dyn_into()
        .map_err(|_| "not a 2d context")?;
    ctx.scale(dpr, dpr)?;
    let search = window.location().search().unwrap_or_default();
    let query = web_sys::UrlSearchParams::new_with_str(&search)?;
    let parsed = Params::parse(|k| query.get(k));

    // The keyboard: held keys by code; released when the window loses focus.
    let keys = Rc::new(RefCell::new(BTreeSet::new()));
    let down = {
        let keys = keys.clone();
        Closure::<dyn FnMut(web_sys::KeyboardEvent)>::new(move |e: web_sys::KeyboardEvent| {
            let code = e.code();
            if game_key(&code) || code.starts_with("Shift") {
                e.prevent_default();
            }
            keys.borrow_mut().insert(code);
        })
    };
    let up = {
        let keys = keys.clone();
        Closure::<dyn FnMut(web_sys::KeyboardEvent)>::new(move |e: web_sys::KeyboardEvent| {
            keys.borrow_mut().remove(&e.code());
        })
    };
    let blur = {
        let keys = keys.clone();
        Closure::<dyn FnMut()>::new(move || keys.borrow_mut().clear())
    };
    window.add_event_listener_with_callback("keydown", down.as_ref().unchecked_ref())?;
    window.add_event_listener_with_callback("keyup", up.as_ref().unchecked_ref())?;
    window.add_event_listener_with_callback("blur", blur.as_ref().unchecked_ref())?;
    // They live as long as the page.
    down.forget();
    up.forget();
    blur.forget();

    let mut app = App::new(Painter::new(ctx), parsed.clone().unwrap_or_default(), keys, load_ms);
    match parsed {
        Ok(_) => app.begin(),
        Err(e) => app.fail(e),
    }
    APP.with(|cell| *cell.borrow_mut() = Some(app));
    run_loop(&window)?;
    Ok(())
}

/// The animation frame callback (it asks for the next frame itself).
type FrameCallback = Closure<dyn FnMut(f64)>;

/// `requestAnimationFrame` forever, plus the background-tab timer.
fn run_loop(window: &web_sys::Window) -> Result<(), JsValue> {
    let raf: Rc<RefCell<Option<FrameCallback>>> = Rc::new(RefCell::new(None));
    let again = raf.clone();
    *raf.borrow_mut() = Some(Closure::new(move |t: f64| {
        APP.with(|cell| {
            if let Ok(mut guard) = cell.try_borrow_mut()
                && let Some(app) = guard.as_mut()
            {
                app.last_raf_at = now();
                app.frame(t, true);
            }
        });
        if let (Some(w), Some(cb)) = (web_sys::window(), again.borrow().as_ref()) {
            let _ = w.request_animation_frame(cb.as_ref().unchecked_ref());
        }
    }));
    if let Some(cb) = raf.borrow().as_ref() {
        window.request_animation_frame(cb.as_ref().unchecked_ref())?;
    }
    // No animation frames in a hidden tab: keep the match moving from a timer.
    let timer = Closure::<dyn FnMut()>::new(move || {
        APP.with(|cell| {
            if let Ok(mut guard) = cell.try_borrow_mut()
                && let Some(app) = guard.as_mut()
            {
                let t = now();
                if t - app.last_raf_at > 200.0 {
                    app.frame(t, false);
                }
            }
        });
    });
    window.set_interval_with_callback_and_timeout_and_arguments_0(
        timer.as_ref().unchecked_ref(),
        100,
    )?;
    timer.forget();
    Ok(())
}

/// `duel.status()`: see the contract in `docs/browser.md`.
#[wasm_bindgen]
pub fn status() -> Result<JsValue, JsValue> {
    with_app(|app| Ok(app.status().into()))
}

/// `duel.playBotLocally()`: leaves the room and plays the bot in this page.
/// The sound commands queued since the last call, for the page's Web Audio (`app.js`): the
/// objects of [`sound_object`] with the sound's name.
#[wasm_bindgen(js_name = takeSounds)]
pub fn take_sounds() -> Result<JsValue, JsValue> {
    with_app(|app| {
        let out = Array::new();
        for q in app.fx.sounds.sink.pending.drain(..) {
            out.push(&sound_object(&q.command, Some(&q.sound)));
        }
        Ok(out.into())
    })
}

#[wasm_bindgen(js_name = playBotLocally)]
pub fn play_bot_locally() -> Result<(), JsValue> {
    with_app(App::play_local)
}

/// `duel.loadReplay(bytes)`: opens a replay in the viewer → `{frames, error}`.
#[wasm_bindgen(js_name = loadReplay)]
pub fn load_replay(bytes: &[u8]) -> Result<JsValue, JsValue> {
    with_app(|app| {
        let o = Object::new();
        match Viewer::load(bytes) {
            Ok(mut v) => {
                app.ids = Some(Ids::new(v.world())?);
                app.fx.clear();
                let frames = v.frames();
                if frames > 0 {
                    v.seek(0, &mut app.fx)?;
                }
                set(&o, "frames", frames);
                set(&o, "keyframes", v.keyframes() as u32);
                set(&o, "players", v.world().players() as u32);
                set(&o, "error", JsValue::NULL);
                app.mode = Mode::Replay(Some(Box::new(v)));
                app.state = "done";
                app.error = None;
                show("error", false);
            }
            Err(e) => {
                set(&o, "frames", 0);
                set(&o, "error", e.as_str());
                set_text("error", &format!("cannot open the replay: {e}"));
                show("error", true);
            }
        }
        Ok(o.into())
    })
}

/// `duel.seek(frame)`: the viewer shows the state after `frame` → its checksum (16 hex digits).
#[wasm_bindgen]
pub fn seek(frame: u32) -> Result<String, JsValue> {
    with_app(|app| match &mut app.mode {
        Mode::Replay(Some(v)) => {
            v.playing = false;
            v.seek(frame, &mut app.fx).map(hex)
        }
        _ => Err("no replay is open (loadReplay first)".into()),
    })
}

/// `duel.setPlaying(on)`: plays or pauses the replay.
#[wasm_bindgen(js_name = setPlaying)]
pub fn set_playing(on: bool) -> Result<(), JsValue> {
    with_app(|app| match &mut app.mode {
        Mode::Replay(Some(v)) => {
            v.playing = on;
            Ok(())
        }
        _ => Err("no replay is open".into()),
    })
}

/// `duel.setShowBoxes(on)`: outlines the hit, hurt and push boxes the last step resolved on
/// the stage (hit red, hurt blue, push yellow), in a match and in the replay viewer.
#[wasm_bindgen(js_name = setShowBoxes)]
pub fn set_show_boxes(on: bool) -> Result<(), JsValue> {
    with_app(|app| {
        app.boxes = Some(on);
        Ok(())
    })
}

/// `duel.replayStatus()` → `{loaded, frames, frame, playing, checksum, recorded_checksum}`.
#[wasm_bindgen(js_name = replayStatus)]
pub fn replay_status() -> Result<JsValue, JsValue> {
    with_app(|app| {
        let o = Object::new();
        match &app.mode {
            Mode::Replay(Some(v)) => {
                set(&o, "loaded", true);
                set(&o, "frames", v.frames());
                set(&o, "frame", v.frame().map_or(JsValue::NULL, JsValue::from));
                set(&o, "playing", v.playing);
                set(&o, "checksum", hex(v.world().checksum()));
                set(
                    &o,
                    "recorded_checksum",
                    v.recorded_checksum().map_or(JsValue::NULL, |s| JsValue::from(hex(s))),
                );
                set(&o, "keyframes", v.keyframes() as u32);
            }
            _ => {
                set(&o, "loaded", false);
                set(&o, "frames", 0);
                set(&o, "frame", JsValue::NULL);
                set(&o, "playing", false);
                set(&o, "checksum", JsValue::NULL);
            }
        }
        Ok(o.into())
    })
}

/// `duel.inspect(player)`: the inspector's text for a player's fighter, now.
#[wasm_bindgen]
pub fn inspect(player: u32) -> Result<String, JsValue> {
    with_app(|app| match app.world() {
        Some(w) => Ok(replay_view::inspect(w, player as usize)),
        None => Err("nothing to inspect yet".into()),
    })
}

/// `duel.replayBytes()`: the replay of this page's match so far (its confirmed frames), as a
/// `.replay` file.
#[wasm_bindgen(js_name = replayBytes)]
pub fn replay_bytes() -> Result<Vec<u8>, JsValue> {
    with_app(|app| {
        let rec = match &app.mode {
            Mode::Online(o) => o.net.peer().runner.recorder(),
            Mode::Local(l) => l.m.peers().first().and_then(|p| p.runner.recorder()),
            _ => None,
        };
        rec.map(|r| r.replay().encode()).ok_or_else(|| "no match is being recorded".to_string())
    })
}

/// The colour of each player (for the page's legend).
#[wasm_bindgen(js_name = playerColors)]
pub fn player_colors() -> Vec<String> {
    COLORS.iter().map(|c| (*c).to_string()).collect()
}
