//! Drawing the duel on a canvas (web-sys `CanvasRenderingContext2d`): the stage, both
//! fighters with their moves, stuns, shields and hit flashes, fireballs, the vitals bars with
//! active effects and cooldowns, the cue words and feed, and the network overlay.
//!
//! Everything here reads the world (fixed point, converted to floats for the screen only) and
//! the [`CueFx`] presenter; nothing writes back.

use crate::cues::{CueFx, Status};
use rollback_abilities::{AttrId, Entity, Fx, TagId, World};
use rollback_abilities_kit::duel::{ARENA_HALF, Body, Duel, FIGHTER_HALF, Kind, moves};
use rollback_abilities_kit::duel::{BEST_OF, MatchState, ROUND_FRAMES, ROUNDS_TO_WIN, match_state};
use std::cell::RefCell;
use web_sys::CanvasRenderingContext2d;

/// The canvas's size in CSS pixels (the backing store is scaled by the device pixel ratio).
pub const WIDTH: f64 = 960.0;
/// See [`WIDTH`].
pub const HEIGHT: f64 = 540.0;

/// The floor's y.
const FLOOR: f64 = 432.0;
/// Where the notice banner ([`Hud::banner`]) spans, top and bottom (y).
const NOTICE_BANNER: (f64, f64) = (238.0, 282.0);
/// The lower edge of the banners [`Painter::round`] draws (a decided round, a decided match).
const ROUND_BANNERS_END: f64 = 252.0;
/// Screen pixels per world unit.
const SCALE: f64 = 2.1;
/// Every player's colour.
pub const COLORS: [&str; 4] = ["#4ea8ff", "#ff7a45", "#7ddc6f", "#d57bff"];
/// The abilities' keys, in the content's ability order (light, heavy, fireball, shield,
/// sprint).
const KEYS: [&str; 5] = ["J", "K", "L", "I", "⇧"];
/// The abilities' short names.
const MOVES: [&str; 5] = ["jab", "heavy", "fire", "shield", "sprint"];

/// What a player reads for an active effect (`None`: not shown — regeneration, costs and
/// cooldowns, which the buttons show, and the sprint's drain, part of sprinting).
fn effect_label(name: &str) -> Option<&'static str> {
    Some(match name {
        "Poison" => "poisoned",
        "Stun" => "stunned",
        "Shield" => "shielded",
        "SprintSpeed" => "sprinting",
        "LifestealHeal" => "healing",
        "LightStrike" | "HeavyStrike" | "FireballHit" => "hit",
        _ => return None,
    })
}

/// The duel's ids the drawing reads, resolved once.
#[derive(Debug)]
pub struct Ids {
    health: AttrId,
    max_health: AttrId,
    mana: AttrId,
    stamina: AttrId,
    t_dead: TagId,
    t_stun: TagId,
    t_shield: TagId,
    t_poisoned: TagId,
    t_sprinting: TagId,
    t_light_startup: TagId,
    t_light_active: TagId,
    t_heavy_startup: TagId,
    t_heavy_active: TagId,
    t_cast: TagId,
    t_window: TagId,
}

impl Ids {
    /// Resolves the names (an error names the one missing).
    pub fn new(world: &World<Duel>) -> Result<Ids, String> {
        let c = world.content();
        let a = |n: &str| c.attr(n).map_err(|e| e.to_string());
        let t = |n: &str| c.tag(n).map_err(|e| e.to_string());
        Ok(Ids {
            health: a("Health")?,
            max_health: a("MaxHealth")?,
            mana: a("Mana")?,
            stamina: a("Stamina")?,
            t_dead: t("State.Dead")?,
            t_stun: t("State.Debuff.Stun")?,
            t_shield: t("State.Buff.Shield")?,
            t_poisoned: t("State.Debuff.Poisoned")?,
            t_sprinting: t("State.Sprinting")?,
            t_light_startup: t("Attack.Light.Startup")?,
            t_light_active: t("Attack.Light.Active")?,
            t_heavy_startup: t("Attack.Heavy.Startup")?,
            t_heavy_active: t("Attack.Heavy.Active")?,
            t_cast: t("Attack.Cast")?,
            t_window: t("Cancel.Window.Light")?,
        })
    }
}

/// Who a fighter is, for its label.
#[derive(Clone, Debug)]
pub struct Who {
    /// The label (`P0 · you`, `P1 · remote`…).
    pub name: String,
}

/// What the overlay and banner say.
#[derive(Clone, Debug, Default)]
pub struct Hud {
    /// A fighter's label per player.
    pub who: Vec<Who>,
    /// The network overlay's lines (text, colour).
    pub net: Vec<(String, &'static str)>,
    /// A big message in the middle.
    pub banner: Option<(String, &'static str)>,
    /// A line under the round timer.
    pub subtitle: Option<String>,
    /// Outline every hit, hurt and push box out (the replay viewer).
    pub show_boxes: bool,
}

/// A canvas and its 2D context.
#[derive(Debug)]
pub struct Painter {
    /// The context.
    pub ctx: CanvasRenderingContext2d,
    /// What the last frame drew where (the page's `status()` exposes it to tests).
    pub drawn: RefCell<Drawn>,
}

/// A text's box on the canvas, in canvas pixels.
#[derive(Clone, Debug)]
pub struct TextBox {
    /// The text.
    pub text: String,
    /// Left.
    pub x0: f64,
    /// Top.
    pub y0: f64,
    /// Right.
    pub x1: f64,
    /// Bottom.
    pub y1: f64,
}

/// A fighter's body and its label on the canvas (x spans, canvas pixels).
#[derive(Clone, Debug)]
pub struct FighterBox {
    /// Its player.
    pub player: usize,
    /// The body's left edge.
    pub x0: f64,
    /// The body's right edge.
    pub x1: f64,
    /// The label's left and right edges.
    pub label: (f64, f64),
}

/// What one frame drew where.
#[derive(Clone, Debug, Default)]
pub struct Drawn {
    /// Every text written.
    pub texts: Vec<TextBox>,
    /// Every standing fighter.
    pub fighters: Vec<FighterBox>,
}

/// Texts keep this far from the canvas's edges.
const MARGIN: f64 = 2.0;
/// The smallest font a text is shrunk to before it is cut with an ellipsis.
const MIN_FONT_PX: f64 = 8.0;

/// The pixel size in a canvas font string (`bold 12px system-ui` → 12).
fn font_px(font: &str) -> f64 {
    font.split_whitespace()
        .find_map(|w| w.strip_suffix("px").and_then(|n| n.parse::<f64>().ok()))
        .unwrap_or(12.0)
}

/// `font` with its pixel size replaced.
fn with_px(font: &str, px: f64) -> String {
    font.split_whitespace()
        .map(|w| {
            if w.strip_suffix("px").is_some_and(|n| n.parse::<f64>().is_ok()) {
                format!("{px:.1}px")
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn fx(v: Fx) -> f64 {
    v.to_num::<f64>()
}

/// The screen x of a world x.
fn sx(x: Fx) -> f64 {
    WIDTH / 2.0 + fx(x) * SCALE
}

impl Painter {
    /// A painter on `ctx`.
    pub fn new(ctx: CanvasRenderingContext2d) -> Painter {
        Painter { ctx, drawn: RefCell::new(Drawn::default()) }
    }

    fn fill(&self, color: &str) {
        self.ctx.set_fill_style_str(color);
    }

    fn stroke(&self, color: &str) {
        self.ctx.set_stroke_style_str(color);
    }

    fn rect(&self, x: f64, y: f64, w: f64, h: f64, color: &str) {
        self.fill(color);
        self.ctx.fill_rect(x, y, w, h);
    }

    /// Writes `s` with its baseline at `y`, kept inside the canvas: moved in from an edge it
    /// would cross, shrunk (then cut with an ellipsis) if it is wider than the canvas.
    fn text(&self, s: &str, x: f64, y: f64, font: &str, color: &str, align: &str) -> TextBox {
        self.text_fit(s, x, y, WIDTH - 2.0 * MARGIN, font, color, align)
    }

    /// [`Painter::text`] within `max_w` pixels: the font shrinks down to [`MIN_FONT_PX`],
    /// then the text is cut with an ellipsis. Returns the box written.
    #[allow(clippy::too_many_arguments, reason = "a canvas call's position, size and styles")]
    fn text_fit(
        &self,
        s: &str,
        x: f64,
        y: f64,
        max_w: f64,
        font: &str,
        color: &str,
        align: &str,
    ) -> TextBox {
        let max_w = max_w.clamp(1.0, WIDTH - 2.0 * MARGIN);
        let mut px = font_px(font);
        let mut f = font.to_string();
        let mut text = s.to_string();
        let mut w = self.text_width(&text, &f);
        while w > max_w && px > MIN_FONT_PX {
            px = (px - 1.0).max(MIN_FONT_PX);
            f = with_px(font, px);
            w = self.text_width(&text, &f);
        }
        while w > max_w && !text.is_empty() {
            text.pop();
            while text.ends_with(' ') {
                text.pop();
            }
            w = self.text_width(&format!("{text}…"), &f);
            if w <= max_w {
                text.push('…');
            }
        }
        let left = match align {
            "center" => x - w / 2.0,
            "right" | "end" => x - w,
            _ => x,
        };
        let x0 = left.clamp(MARGIN, (WIDTH - MARGIN - w).max(MARGIN));
        let (ascent, descent) = (px * 0.8, px * 0.25);
        let baseline = y.clamp(MARGIN + ascent, HEIGHT - MARGIN - descent);
        self.ctx.set_font(&f);
        self.ctx.set_text_align("left");
        self.fill(color);
        let _ = self.ctx.fill_text(&text, x0, baseline);
        let b = TextBox { text, x0, y0: baseline - ascent, x1: x0 + w, y1: baseline + descent };
        self.drawn.borrow_mut().texts.push(b.clone());
        b
    }

    /// A decoration drawn with a font (the stun's circling stars), centred on `x`: a shape,
    /// not a text to read, so it is not among the texts [`Drawn`] lists.
    fn glyph(&self, g: &str, x: f64, y: f64, color: &str) {
        self.ctx.set_font("16px system-ui");
        self.ctx.set_text_align("center");
        self.fill(color);
        let _ = self.ctx.fill_text(g, x.clamp(10.0, WIDTH - 10.0), y);
        self.ctx.set_text_align("left");
    }

    fn circle(&self, x: f64, y: f64, r: f64, color: &str) {
        self.ctx.begin_path();
        let _ = self.ctx.arc(x, y, r.max(0.0), 0.0, std::f64::consts::TAU);
        self.fill(color);
        self.ctx.fill();
    }

    fn ring(&self, x: f64, y: f64, r: f64, width: f64, color: &str) {
        self.ctx.begin_path();
        let _ = self.ctx.arc(x, y, r.max(0.0), 0.0, std::f64::consts::TAU);
        self.ctx.set_line_width(width);
        self.stroke(color);
        self.ctx.stroke();
    }

    fn line(&self, x0: f64, y0: f64, x1: f64, y1: f64, width: f64, color: &str) {
        self.ctx.begin_path();
        self.ctx.move_to(x0, y0);
        self.ctx.line_to(x1, y1);
        self.ctx.set_line_width(width);
        self.stroke(color);
        self.ctx.stroke();
    }

    fn text_width(&self, s: &str, font: &str) -> f64 {
        self.ctx.set_font(font);
        self.ctx.measure_text(s).map(|m| m.width()).unwrap_or(0.0)
    }

    /// A bar: background, fill fraction, border and a caption.
    #[allow(clippy::too_many_arguments, reason = "a canvas call's position, size and styles")]
    fn bar(&self, x: f64, y: f64, w: f64, h: f64, frac: f64, color: &str, caption: &str) {
        self.rect(x, y, w, h, "#1b1e2b");
        self.rect(x, y, w * frac.clamp(0.0, 1.0), h, color);
        self.ctx.set_line_width(1.0);
        self.stroke("#3a3f55");
        self.ctx.stroke_rect(x + 0.5, y + 0.5, w - 1.0, h - 1.0);
        if !caption.is_empty() && h >= 10.0 {
            self.text(caption, x + w - 4.0, y + h - 3.0, "bold 11px system-ui", "#f4f4f8", "right");
        }
    }

    /// Clears to the stage's background.
    pub fn background(&self) {
        let sky = self.ctx.create_linear_gradient(0.0, 0.0, 0.0, HEIGHT);
        let _ = sky.add_color_stop(0.0, "#10131f");
        let _ = sky.add_color_stop(0.7, "#1d2340");
        let _ = sky.add_color_stop(1.0, "#241c33");
        self.ctx.set_fill_style_canvas_gradient(&sky);
        self.ctx.fill_rect(0.0, 0.0, WIDTH, HEIGHT);
        // The floor and the arena's edges.
        self.rect(0.0, FLOOR, WIDTH, 8.0, "#2f3552");
        let (l, r) = (sx(-ARENA_HALF), sx(ARENA_HALF));
        self.rect(l - 3.0, FLOOR - 40.0, 3.0, 48.0, "#4a5180");
        self.rect(r, FLOOR - 40.0, 3.0, 48.0, "#4a5180");
        for i in 0..=8 {
            let x = l + (r - l) * f64::from(i) / 8.0;
            self.rect(x - 0.5, FLOOR + 8.0, 1.0, 5.0, "#3a4066");
        }
    }

    /// A message screen (loading, connecting, errors).
    pub fn message(&self, title: &str, lines: &[String], color: &str, now: f64) {
        self.background();
        self.text(title, WIDTH / 2.0, 200.0, "bold 30px system-ui", color, "center");
        for (i, l) in lines.iter().enumerate() {
            self.text(
                l,
                WIDTH / 2.0,
                245.0 + 24.0 * i as f64,
                "16px system-ui",
                "#c9cce0",
                "center",
            );
        }
        // A spinner while something is going on.
        if color != "#ff5d73" {
            let a = now / 300.0;
            for k in 0..8 {
                let t = a + f64::from(k) * std::f64::consts::TAU / 8.0;
                let alpha = 0.15 + 0.85 * f64::from(k) / 8.0;
                self.ctx.set_global_alpha(alpha);
                self.circle(WIDTH / 2.0 + 18.0 * t.cos(), 140.0 + 18.0 * t.sin(), 4.0, "#9fb4ff");
            }
            self.ctx.set_global_alpha(1.0);
        }
    }

    /// The whole match view.
    pub fn world(&self, world: &World<Duel>, ids: &Ids, cues: &CueFx, hud: &Hud) {
        *self.drawn.borrow_mut() = Drawn::default();
        self.background();
        let players = world.players().min(4);
        let who = |p: usize| hud.who.get(p).map_or("", |w| w.name.as_str());
        // Back to front: knocked-out fighters lying on the floor, fireballs, the standing
        // fighters, then the knock-out marks over all of them.
        let fighters: Vec<(usize, Entity, &Body, bool)> = (0..players)
            .filter_map(|p| {
                let e = world.player_owner(p)?;
                Some((p, e, world.component(e)?, world.has_tag(e, ids.t_dead)))
            })
            .collect();
        for &(p, e, b, _) in fighters.iter().filter(|f| f.3) {
            self.fighter(world, ids, cues, e, b, p, who(p));
        }
        for e in world.entities() {
            if let Some(b) = world.component(e)
                && b.kind == Kind::Fireball as u8
            {
                self.fireball(b);
            }
        }
        for &(p, e, b, _) in fighters.iter().filter(|f| !f.3) {
            self.fighter(world, ids, cues, e, b, p, who(p));
        }
        for &(p, _, b, _) in fighters.iter().filter(|f| f.3) {
            self.ko_mark(sx(b.x), who(p));
        }
        if hud.show_boxes {
            self.boxes(world);
        }
        // Words stay below the banners and step back while a result or a notice is shown.
        let result = !matches!(match_state(world), MatchState::Fighting { .. });
        let (top, dim) = match (&hud.banner, result) {
            (Some(_), _) => (NOTICE_BANNER.1, 0.45),
            (None, true) => (ROUND_BANNERS_END, 0.45),
            (None, false) => (ROUND_BANNERS_END, 1.0),
        };
        self.floats(world, cues, top, dim);
        for p in 0..players {
            self.panel(world, ids, p, players, hud);
        }
        self.round(world, hud);
        self.feed(cues);
        self.overlay(&hud.net);
        if let Some((text, color)) = &hud.banner {
            let (y0, y1) = NOTICE_BANNER;
            self.rect(0.0, y0, WIDTH, y1 - y0, "rgba(8,10,18,0.72)");
            self.text(text, WIDTH / 2.0, 268.0, "bold 22px system-ui", color, "center");
        }
    }

    /// Outlines the boxes the last step resolved ([`World::boxes`]): hit boxes red, hurt
    /// boxes blue, push boxes yellow. Heights are drawn at the figures' scale (a 60-unit box
    /// as tall as a standing fighter).
    fn boxes(&self, world: &World<Duel>) {
        use rollback_abilities::BoxKind;
        const Y_SCALE: f64 = 1.45;
        for b in world.boxes() {
            let (color, fill) = match b.kind {
                BoxKind::Hit => ("#ff3b5c", "rgba(255,59,92,0.22)"),
                BoxKind::Hurt => ("#4cc9f0", "rgba(76,201,240,0.12)"),
                BoxKind::Push => ("#ffd166", "rgba(0,0,0,0)"),
            };
            let (x0, x1) = (sx(b.rect.x0), sx(b.rect.x1));
            let (y0, y1) = (FLOOR - fx(b.rect.y1) * Y_SCALE, FLOOR - fx(b.rect.y0) * Y_SCALE);
            self.rect(x0, y0, x1 - x0, y1 - y0, fill);
            self.ctx.set_line_width(if b.kind == BoxKind::Hit { 2.0 } else { 1.0 });
            self.stroke(color);
            self.ctx.stroke_rect(x0, y0, x1 - x0, y1 - y0);
        }
    }

    fn fireball(&self, b: &Body) {
        let x = sx(b.x);
        let y = FLOOR - 62.0;
        let dir = if b.vx >= Fx::ZERO { 1.0 } else { -1.0 };
        let r = fx(moves().fireball_radius) * SCALE;
        for k in 1..5 {
            self.ctx.set_global_alpha(0.35 - 0.07 * f64::from(k));
            self.circle(
                x - dir * f64::from(k) * 9.0,
                y,
                r * (1.0 - 0.12 * f64::from(k)),
                "#ff9f1c",
            );
        }
        self.ctx.set_global_alpha(1.0);
        let g = self.ctx.create_radial_gradient(x, y, 2.0, x, y, r);
        if let Ok(g) = g {
            let _ = g.add_color_stop(0.0, "#fff3b0");
            let _ = g.add_color_stop(0.5, "#ffb703");
            let _ = g.add_color_stop(1.0, "#fb5607");
            self.ctx.set_fill_style_canvas_gradient(&g);
            self.ctx.begin_path();
            let _ = self.ctx.arc(x, y, r, 0.0, std::f64::consts::TAU);
            self.ctx.fill();
        }
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "what one fighter's drawing reads: the world, its ids, cues, body and labels"
    )]
    fn fighter(
        &self,
        world: &World<Duel>,
        ids: &Ids,
        cues: &CueFx,
        e: Entity,
        b: &Body,
        player: usize,
        who: &str,
    ) {
        let color = COLORS[player % COLORS.len()];
        let mut x = sx(b.x);
        let dir = if b.facing < 0 { -1.0 } else { 1.0 };
        let w = fx(Fx::from_num(FIGHTER_HALF)) * SCALE * 2.0;
        let dead = world.has_tag(e, ids.t_dead);
        if world.is_time_held(e) {
            // Hitstop: the body is frozen; shake it a little.
            x += if (cues.now / 30.0) as i64 % 2 == 0 { 2.0 } else { -2.0 };
        }
        if dead {
            // Lying on the floor; the "K.O." mark is written once everything else is drawn.
            self.rect(x - 48.0, FLOOR - 24.0, 96.0, 22.0, "#5c6075");
            self.circle(x + 56.0 * dir, FLOOR - 14.0, 13.0, "#5c6075");
            return;
        }
        let h = 72.0;
        let top = FLOOR - h;
        let head_y = top - 15.0;
        // Sprint: speed lines behind.
        if world.has_tag(e, ids.t_sprinting) {
            for k in 0..4 {
                let y = top + 10.0 + f64::from(k) * 15.0;
                let x0 = x - dir * (w / 2.0 + 8.0);
                self.line(x0, y, x0 - dir * (18.0 + 6.0 * f64::from(k % 2)), y, 2.0, "#d0d4e8");
            }
        }
        // Arms: the moves' phases, from the timeline tags.
        let shoulder = top + 18.0;
        // How far the moves' hit boxes (content) reach a fighter's centre.
        let reach = |units: Fx| fx(units) * SCALE;
        let (light_reach, heavy_reach) = (moves().light_reach, moves().heavy_reach);
        if world.has_tag(e, ids.t_light_active) {
            self.line(x, shoulder, x + dir * reach(light_reach), shoulder, 9.0, "#f1f3ff");
            self.circle(x + dir * reach(light_reach), shoulder, 7.0, color);
        } else if world.has_tag(e, ids.t_heavy_active) {
            self.line(
                x,
                shoulder + 6.0,
                x + dir * reach(heavy_reach),
                shoulder + 6.0,
                14.0,
                "#ffd166",
            );
            self.circle(x + dir * reach(heavy_reach), shoulder + 6.0, 11.0, "#ffb703");
        } else if world.has_tag(e, ids.t_light_startup) {
            self.line(x, shoulder, x + dir * 18.0, shoulder - 4.0, 8.0, color);
        } else if world.has_tag(e, ids.t_heavy_startup) {
            self.line(x, shoulder + 6.0, x - dir * 16.0, shoulder - 6.0, 12.0, color);
        } else if world.has_tag(e, ids.t_cast) {
            self.line(x, shoulder, x + dir * 26.0, shoulder, 8.0, color);
            let pulse = 6.0 + 3.0 * (cues.now / 60.0).sin();
            self.circle(x + dir * 30.0, shoulder, pulse, "#ffb703");
        } else {
            self.line(x, shoulder, x + dir * 14.0, shoulder + 20.0, 8.0, color);
        }
        // The cancel window of the jab: a thin ring on the fist.
        if world.has_tag(e, ids.t_window) {
            self.ring(x + dir * 20.0, shoulder, 9.0, 2.0, "#ffd166");
        }
        // Body and head.
        let stunned = world.has_tag(e, ids.t_stun);
        let body_color = if stunned { "#c9b458" } else { color };
        self.rect(x - w / 2.0, top, w, h, body_color);
        self.circle(x, head_y, 15.0, body_color);
        self.circle(x + dir * 6.0, head_y - 3.0, 3.0, "#0b0d16");
        let tag = who.split(' ').next().unwrap_or(who);
        let label = self.text(tag, x, head_y - 22.0, "bold 12px system-ui", color, "center");
        self.drawn.borrow_mut().fighters.push(FighterBox {
            player,
            x0: x - w / 2.0,
            x1: x + w / 2.0,
            label: (label.x0, label.x1),
        });
        if world.has_tag(e, ids.t_poisoned) {
            self.ctx.set_global_alpha(0.35);
            self.rect(x - w / 2.0, top, w, h, "#7bd23f");
            self.ctx.set_global_alpha(1.0);
            let t = cues.now / 400.0;
            for k in 0..3 {
                let by = top + 60.0 - ((t + f64::from(k) / 3.0).fract() * 70.0);
                self.circle(x - 14.0 + 14.0 * f64::from(k), by, 3.0, "#a7e05f");
            }
        }
        if cues.flashing(e) {
            self.ctx.set_global_alpha(0.8);
            self.rect(x - w / 2.0 - 2.0, top - 2.0, w + 4.0, h + 4.0, "#ffffff");
            self.circle(x, head_y, 17.0, "#ffffff");
            self.ctx.set_global_alpha(1.0);
        }
        if stunned {
            let t = cues.now / 250.0;
            for k in 0..3 {
                let a = t + f64::from(k) * std::f64::consts::TAU / 3.0;
                self.glyph("✦", x + 26.0 * a.cos(), head_y + 4.0 + 8.0 * a.sin(), "#ffe066");
            }
        }
        if world.has_tag(e, ids.t_shield) {
            self.ctx.set_global_alpha(0.22);
            self.ctx.begin_path();
            let _ = self.ctx.ellipse(x, top + 20.0, 44.0, 68.0, 0.0, 0.0, std::f64::consts::TAU);
            self.fill("#74c0fc");
            self.ctx.fill();
            self.ctx.set_global_alpha(0.9);
            self.ctx.set_line_width(2.5);
            self.stroke("#a5d8ff");
            self.ctx.stroke();
            self.ctx.set_global_alpha(1.0);
        }
    }

    /// "P2 K.O." above a knocked-out fighter lying at `x`, moved up until it overlaps no text
    /// written before it (another fighter's mark or label).
    fn ko_mark(&self, x: f64, who: &str) {
        let font = "bold 14px system-ui";
        let tag = who.split(' ').next().unwrap_or(who);
        let ko = format!("{tag} K.O.");
        let w = self.text_width(&ko, font);
        let (x0, x1) = (x - w / 2.0, x + w / 2.0);
        let mut y = FLOOR - 34.0;
        let taken = |y: f64| {
            self.drawn.borrow().texts.iter().any(|t| {
                x0 < t.x1 + 2.0 && t.x0 < x1 + 2.0 && {
                    let (top, bottom) = (y - 14.0 * 0.8, y + 14.0 * 0.25);
                    top < t.y1 + 2.0 && t.y0 < bottom + 2.0
                }
            })
        };
        while taken(y) {
            y -= 18.0;
        }
        self.text(&ko, x, y, font, "#ff006e", "center");
    }

    /// The cue words over their targets: predicted ones a little transparent, confirmed ones
    /// solid, cancelled ones grey, struck through and fading. Newest first, each word is put
    /// above its fighter, behind it (away from whom it faces), and moved up until it overlaps
    /// no word placed before it: no two words overlap, whoever they belong to. Words stay below
    /// `top` (a banner's lower edge); `dim` scales their opacity (a banner is shown).
    fn floats(&self, world: &World<Duel>, cues: &CueFx, top: f64, dim: f64) {
        let font = "bold 15px system-ui";
        let mut placed: Vec<(f64, f64, f64, f64)> = Vec::new();
        for f in cues.floats.iter().rev() {
            let Some(b) = world.component(f.key.target) else { continue };
            let label = match f.status {
                Status::Cancelled => format!("{} ✗", f.label),
                _ => f.label.to_string(),
            };
            let w = self.text_width(&label, font);
            let behind = if b.facing < 0 { 38.0 } else { -38.0 };
            let x = (sx(b.x) + behind).clamp(MARGIN + w / 2.0, WIDTH - MARGIN - w / 2.0);
            let mut y = FLOOR - 122.0;
            let overlaps = |y: f64, placed: &[(f64, f64, f64, f64)]| {
                let (x0, x1, y0, y1) = (x - w / 2.0 - 3.0, x + w / 2.0 + 3.0, y - 14.0, y + 3.0);
                placed.iter().any(|p| x0 < p.1 && p.0 < x1 && y0 < p.3 && p.2 < y1)
            };
            // A word's box starts 14 pixels above its baseline; 4 more keep it off the banner.
            while overlaps(y, &placed) && y - 17.0 - 18.0 >= top {
                y -= 17.0;
            }
            if overlaps(y, &placed) {
                continue; // no room left: the oldest words wait
            }
            placed.push((x - w / 2.0 - 3.0, x + w / 2.0 + 3.0, y - 14.0, y + 3.0));
            match f.status {
                Status::Cancelled => {
                    let fade = 1.0 - ((cues.now - f.cancelled_at) / 2200.0).clamp(0.0, 1.0);
                    self.ctx.set_global_alpha(0.9 * fade * dim);
                    let t = self.text(&label, x, y, font, "#8d92a8", "center");
                    self.line(t.x0 - 2.0, y - 5.0, t.x1 + 2.0, y - 5.0, 2.0, "#ff5d73");
                }
                Status::Predicted | Status::Confirmed => {
                    let age = ((cues.now - f.born) / 1100.0).clamp(0.0, 1.0);
                    let solid = if f.status == Status::Predicted { 0.7 } else { 1.0 };
                    self.ctx.set_global_alpha(dim * solid * (1.0 - age * age));
                    self.text(&label, x, y, font, f.color, "center");
                }
            }
            self.ctx.set_global_alpha(1.0);
        }
    }

    /// A fighter's panel: name, rounds won, health/mana/stamina, active effects and the
    /// abilities with their cooldowns.
    fn panel(&self, world: &World<Duel>, ids: &Ids, p: usize, players: usize, hud: &Hud) {
        let gap = 12.0;
        let pw = (WIDTH - 2.0 * gap - gap * (players as f64 - 1.0)) / players as f64;
        let x = gap + p as f64 * (pw + gap);
        let y = 10.0;
        let color = COLORS[p % COLORS.len()];
        self.rect(x, y, pw, 126.0, "rgba(12,14,24,0.78)");
        self.rect(x, y, 4.0, 126.0, color);
        let Some(e) = world.player_owner(p) else { return };
        let who = hud.who.get(p).map_or_else(|| format!("P{p}"), |w| w.name.clone());
        let g = world.global();
        let wins = g.wins.get(p).copied().unwrap_or(0);
        // Rounds won, in words and pips: "won 1/2" (two wins take the match).
        let won = format!("won {wins}/{ROUNDS_TO_WIN}");
        let tb =
            self.text_fit(&won, x + pw - 8.0, y + 18.0, 64.0, "11px system-ui", "#ffd166", "right");
        for k in 0..ROUNDS_TO_WIN {
            let cx = tb.x0 - 9.0 - 12.0 * f64::from(ROUNDS_TO_WIN - 1 - k);
            if k < wins {
                self.circle(cx, y + 14.0, 4.5, "#ffd166");
            } else {
                self.ring(cx, y + 14.0, 4.0, 1.5, "#6b708c");
            }
        }
        let name_room = tb.x0 - 12.0 * f64::from(ROUNDS_TO_WIN) - 8.0 - (x + 12.0);
        self.text_fit(&who, x + 12.0, y + 18.0, name_room, "bold 14px system-ui", color, "left");
        let attr = |a| world.attr(e, a).map_or(0.0, fx);
        let (hp, max_hp) = (attr(ids.health), attr(ids.max_health).max(1.0));
        let bw = pw - 24.0;
        let hp_color = if hp / max_hp > 0.5 {
            "#57cc99"
        } else if hp / max_hp > 0.25 {
            "#ffd166"
        } else {
            "#ff5d73"
        };
        self.bar(
            x + 12.0,
            y + 26.0,
            bw,
            16.0,
            hp / max_hp,
            hp_color,
            &format!("{hp:.0} / {max_hp:.0}"),
        );
        let mana = attr(ids.mana);
        self.bar(
            x + 12.0,
            y + 45.0,
            bw * 0.62,
            10.0,
            mana / 100.0,
            "#4dabf7",
            &format!("{mana:.0}"),
        );
        let stamina = attr(ids.stamina);
        self.bar(
            x + 12.0,
            y + 58.0,
            bw * 0.62,
            10.0,
            stamina / 100.0,
            "#fab005",
            &format!("{stamina:.0}"),
        );
        self.text("mana", x + 16.0 + bw * 0.62, y + 54.0, "10px system-ui", "#9aa0bc", "left");
        self.text("stamina", x + 16.0 + bw * 0.62, y + 67.0, "10px system-ui", "#9aa0bc", "left");
        // Active effects (not the regeneration, not cooldowns: those are on the buttons).
        let c = world.content();
        let frame = world.frame();
        let mut cx = x + 12.0;
        for (ef, t) in world.effects(e).iter().zip(world.effect_timers(e)) {
            let Some(name) = effect_label(c.effect_name(ef.def)) else { continue };
            let label =
                if ef.stacks > 1 { format!("{name} ×{}", ef.stacks) } else { name.to_string() };
            let font = "11px system-ui";
            let w = self.text_width(&label, font) + 10.0;
            if cx + w > x + pw - 8.0 {
                break;
            }
            self.rect(cx, y + 73.0, w, 17.0, "#2a2f48");
            if let Some(rem) = t.remaining(frame)
                && ef.duration > 0
            {
                let frac = f64::from(rem) / f64::from(ef.duration);
                self.rect(cx, y + 87.0, w * frac.clamp(0.0, 1.0), 3.0, "#c77dff");
            }
            self.text(&label, cx + 5.0, y + 85.0, font, "#e9ecff", "left");
            cx += w + 5.0;
        }
        // Abilities: key, name, cooldown sweep, active glow.
        let bx = (pw - 24.0 - 4.0 * 4.0) / 5.0;
        for (k, (h, spec)) in world.abilities(e).take(5).enumerate() {
            let ax = x + 12.0 + k as f64 * (bx + 4.0);
            let ay = y + 96.0;
            let active = spec.is_active();
            self.rect(ax, ay, bx, 24.0, if active { "#3d5a80" } else { "#22263a" });
            if let Some((rem, total)) = world.ability_cooldown_remaining(h)
                && total > 0
                && rem > 0
            {
                let frac = f64::from(rem) / f64::from(total);
                self.rect(ax, ay, bx * frac.clamp(0.0, 1.0), 24.0, "rgba(255,93,115,0.45)");
                // Tenths of a second, rounded up: a cooldown still running never reads 0.0s.
                let tenths = rem.div_ceil(6);
                let secs = format!("{}.{}s", tenths / 10, tenths % 10);
                let room = (bx - 18.0).min(24.0);
                self.text_fit(
                    &secs,
                    ax + bx - 2.0,
                    ay + 16.0,
                    room,
                    "10px system-ui",
                    "#ffd3d9",
                    "right",
                );
            }
            let key =
                self.text(KEYS[k], ax + 4.0, ay + 16.0, "bold 11px system-ui", "#ffd166", "left");
            // A narrow chip (four players) shows the key only; the cooldown's seconds take
            // the right-hand side while it runs.
            let cooling = world.ability_cooldown_remaining(h).is_some_and(|(r, t)| r > 0 && t > 0);
            let room = ax + bx - 3.0 - (key.x1 + 3.0) - if cooling { 24.0 } else { 0.0 };
            if room >= 24.0 {
                self.text_fit(
                    MOVES[k],
                    key.x1 + 3.0,
                    ay + 16.0,
                    room,
                    "11px system-ui",
                    "#e9ecff",
                    "left",
                );
            }
        }
    }

    /// The round, its clock and the match: who won the round, who won the match, and the
    /// rematch.
    fn round(&self, world: &World<Duel>, hud: &Hud) {
        let g = world.global();
        let state = match_state(world);
        // The clock stops when the round is decided (a knock-out or the time).
        let frame = match state {
            MatchState::Fighting { .. } => world.next_frame(),
            _ => g.ko_frame,
        };
        let left = ROUND_FRAMES.saturating_sub(frame.saturating_sub(g.round_start));
        let secs = left.div_ceil(60);
        let clock = format!("{}:{:02}", secs / 60, secs % 60);
        // Past the best of, the lead is shared: a tie-break round.
        let text = if matches!(state, MatchState::MatchOver { .. }) {
            format!("MATCH OVER · best of {BEST_OF} · {} rounds played", g.round)
        } else if g.round > BEST_OF {
            format!("ROUND {} · TIE-BREAK   {clock}", g.round)
        } else {
            format!("ROUND {} of best {BEST_OF}   {clock}", g.round)
        };
        self.text(&text, WIDTH / 2.0, 160.0, "bold 18px system-ui", "#e9ecff", "center");
        if let Some(s) = &hud.subtitle {
            self.text(s, WIDTH / 2.0, 180.0, "12px system-ui", "#9aa0bc", "center");
        }
        let name = |p: usize| hud.who.get(p).map_or_else(|| format!("P{p}"), |w| w.name.clone());
        let score = || {
            let n = world.players().min(g.wins.len());
            g.wins[..n].iter().map(u32::to_string).collect::<Vec<_>>().join("–")
        };
        match state {
            MatchState::Fighting { .. } => {}
            MatchState::RoundOver { winner } => {
                let what = match winner {
                    None => format!("ROUND {} IS A DRAW", g.round),
                    Some(p) => format!("{} WINS ROUND {}", name(p), g.round),
                };
                self.rect(0.0, 188.0, WIDTH, 40.0, "rgba(8,10,18,0.72)");
                self.text(&what, WIDTH / 2.0, 216.0, "bold 24px system-ui", "#ffd166", "center");
            }
            MatchState::MatchOver { winner, rematch_open, asked } => {
                let what = match winner {
                    None => format!("MATCH DRAWN  {}", score()),
                    Some(p) => format!("{} WINS THE MATCH  {}", name(p), score()),
                };
                self.rect(0.0, 188.0, WIDTH, 64.0, "rgba(8,10,18,0.8)");
                self.text(&what, WIDTH / 2.0, 220.0, "bold 26px system-ui", "#80ed99", "center");
                let line = if !rematch_open {
                    "J asks for a rematch in a moment".to_string()
                } else {
                    let waiting: Vec<String> = (0..world.players())
                        .filter(|p| asked & (1 << p) == 0)
                        .map(|p| format!("P{p}"))
                        .collect();
                    format!("press J for a rematch · waiting for {}", waiting.join(", "))
                };
                self.text(&line, WIDTH / 2.0, 244.0, "14px system-ui", "#e9ecff", "center");
            }
        }
    }

    /// The cue feed.
    fn feed(&self, cues: &CueFx) {
        let (x, y) = (12.0, 448.0);
        self.rect(x, y, 520.0, 84.0, "rgba(12,14,24,0.78)");
        self.text_fit(
            "CUES  ·  each shown once;  ~ predicted  ✓ confirmed  ✗ cancelled (misprediction)",
            x + 8.0,
            y + 13.0,
            504.0,
            "bold 10px system-ui",
            "#9aa0bc",
            "left",
        );
        let lines: Vec<_> = cues.feed.iter().rev().take(5).collect();
        for (i, l) in lines.iter().enumerate() {
            let ly = y + 28.0 + 12.5 * i as f64;
            let (mark, color) = match l.status {
                Status::Predicted => ("~", "#c9cce0"),
                Status::Confirmed => ("✓", "#80ed99"),
                Status::Cancelled => ("✗", "#8d92a8"),
            };
            let text = format!("{mark} {}", l.text);
            let font = "11px ui-monospace, monospace";
            let t = self.text_fit(&text, x + 10.0, ly, 500.0, font, color, "left");
            if l.status == Status::Cancelled {
                self.line(t.x0, ly - 4.0, t.x1, ly - 4.0, 1.5, "#ff5d73");
            }
        }
    }

    /// The network overlay.
    fn overlay(&self, lines: &[(String, &'static str)]) {
        if lines.is_empty() {
            return;
        }
        let (x, y) = (WIDTH - 412.0, 448.0);
        self.rect(x, y, 400.0, 84.0, "rgba(12,14,24,0.78)");
        for (i, (text, color)) in lines.iter().take(6).enumerate() {
            self.text_fit(
                text,
                x + 10.0,
                y + 14.0 + 13.0 * i as f64,
                380.0,
                "11px ui-monospace, monospace",
                color,
                "left",
            );
        }
    }
}
