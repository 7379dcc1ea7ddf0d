//! The duel's content (embedded) and every id its code refers to, resolved once.

use rollback_abilities::num::{self, Fx};
use rollback_abilities::{AbilityDefId, AttrId, AttrSetId, BodyId, BoxKind, EffectDefId, TagId};
use rollback_abilities::{Content, ContentBuilder, ContentError};
use std::sync::{Arc, OnceLock};

/// The duel's content file, `examples/content/duel.ron`, embedded in the kit.
pub const CONTENT_RON: &str = include_str!("../../../content/duel.ron");

/// The name content errors use for the embedded file.
const CONTENT_FILE: &str = "examples/content/duel.ron";

/// Freezes the embedded content (a fresh copy; [`content`] caches one).
pub fn try_content() -> Result<Content, ContentError> {
    ContentBuilder::new().file(CONTENT_FILE, CONTENT_RON).build()
}

/// The duel's frozen content, loaded once per process and shared.
///
/// # Panics
///
/// Only if the embedded `duel.ron` is invalid, which the crate's tests rule out.
pub fn content() -> Arc<Content> {
    static CONTENT: OnceLock<Arc<Content>> = OnceLock::new();
    CONTENT
        .get_or_init(|| match try_content() {
            Ok(c) => Arc::new(c),
            Err(e) => panic!("the embedded duel content is invalid: {e}"),
        })
        .clone()
}

/// Every id the duel's code uses.
#[derive(Debug)]
pub(crate) struct Ids {
    pub t_dead: TagId,
    pub t_stun: TagId,
    pub t_shield: TagId,
    pub t_attacking: TagId,
    pub t_light: TagId,
    pub t_light_active: TagId,
    pub t_window: TagId,
    pub t_lifesteal: TagId,
    pub t_release: TagId,
    pub t_sprint_speed: TagId,
    pub t_sprint_drain: TagId,
    pub t_cd_fireball: TagId,
    pub t_cd_shield: TagId,
    pub d_damage: TagId,
    pub d_heal: TagId,
    pub c_crit: TagId,
    pub c_blocked: TagId,
    pub c_launch: TagId,
    pub c_ko: TagId,
    pub health: AttrId,
    pub max_health: AttrId,
    pub mana: AttrId,
    pub stamina: AttrId,
    pub move_speed: AttrId,
    pub e_light: EffectDefId,
    pub e_heavy: EffectDefId,
    pub e_fireball: EffectDefId,
    pub e_lifesteal: EffectDefId,
    pub e_poison: EffectDefId,
    pub e_stun: EffectDefId,
    pub e_shield: EffectDefId,
    pub e_sprint_speed: EffectDefId,
    pub e_sprint_drain: EffectDefId,
    pub e_mana_regen: EffectDefId,
    pub e_stamina_regen: EffectDefId,
    pub abilities: [AbilityDefId; 5],
    pub sets: [AttrSetId; 4],
    pub b_fighter: BodyId,
    pub b_fireball: BodyId,
    pub ev_light: TagId,
    pub ev_heavy: TagId,
    pub ev_fireball: TagId,
    pub moves: Moves,
}

/// What the duel's content says about its moves' boxes, for the bot and the drawing (the hits
/// themselves are resolved from the boxes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moves {
    /// How far ahead of the attacker's centre the light attack's hit box reaches a fighter's
    /// centre (the box's far edge plus half a fighter's hurt box).
    pub light_reach: Fx,
    /// The same for the heavy attack.
    pub heavy_reach: Fx,
    /// Half a fireball hit box's width.
    pub fireball_radius: Fx,
    /// The light attack hit box's damage.
    pub light_damage: Fx,
    /// The heavy attack hit box's damage.
    pub heavy_damage: Fx,
    /// The fireball hit box's damage.
    pub fireball_damage: Fx,
}

/// What the duel's content says about its moves' boxes ([`Moves`]).
pub fn moves() -> Moves {
    ids().moves
}

/// Reads [`Moves`] from the content: the first hit box of each move's timeline and of the
/// fireball's body, and the fighter's hurt box.
fn read_moves(c: &Content) -> Moves {
    let first_hit = |boxes: &[rollback_abilities::BoxDef]| {
        boxes.iter().find(|b| b.kind == BoxKind::Hit).copied()
    };
    let timeline = |n: &str| {
        c.timeline(n)
            .ok()
            .and_then(|t| c.timeline_defs().get(t.index()))
            .and_then(|t| first_hit(&t.boxes))
            .unwrap_or_else(|| panic!("duel content: no hit box in timeline {n}"))
    };
    let body = |n: &str| {
        c.body(n)
            .ok()
            .and_then(|b| c.body_defs().get(usize::from(b.0)))
            .unwrap_or_else(|| panic!("duel content: no body {n}"))
    };
    let half = body("Fighter")
        .boxes
        .iter()
        .find(|b| b.kind == BoxKind::Hurt)
        .map_or(Fx::ZERO, |b| num::add(b.x, b.w));
    let fireball = first_hit(&body("Fireball").boxes)
        .unwrap_or_else(|| panic!("duel content: no hit box on the fireball"));
    let (light, heavy) = (timeline("Light"), timeline("Heavy"));
    Moves {
        light_reach: num::add(num::add(light.x, light.w), half),
        heavy_reach: num::add(num::add(heavy.x, heavy.w), half),
        fireball_radius: fireball.w / 2,
        light_damage: light.hit.damage,
        heavy_damage: heavy.hit.damage,
        fireball_damage: fireball.hit.damage,
    }
}

/// The ids, resolved from [`content`] once.
///
/// # Panics
///
/// Only if the embedded content lacks a name the code uses (ruled out by the crate's tests).
pub(crate) fn ids() -> &'static Ids {
    static IDS: OnceLock<Ids> = OnceLock::new();
    IDS.get_or_init(|| {
        let c = content();
        let t = |n: &str| c.tag(n).unwrap_or_else(|e| panic!("duel content: {e}"));
        let a = |n: &str| c.attr(n).unwrap_or_else(|e| panic!("duel content: {e}"));
        let e = |n: &str| c.effect(n).unwrap_or_else(|e| panic!("duel content: {e}"));
        let ab = |n: &str| c.ability(n).unwrap_or_else(|e| panic!("duel content: {e}"));
        let s = |n: &str| c.attr_set(n).unwrap_or_else(|e| panic!("duel content: {e}"));
        Ids {
            t_dead: t("State.Dead"),
            t_stun: t("State.Debuff.Stun"),
            t_shield: t("State.Buff.Shield"),
            t_attacking: t("State.Attacking"),
            t_light: t("Attack.Light"),
            t_light_active: t("Attack.Light.Active"),
            t_window: t("Cancel.Window.Light"),
            t_lifesteal: t("Effect.CanLifesteal"),
            t_release: t("Event.Fireball.Release"),
            t_sprint_speed: t("Effect.Sprint.Speed"),
            t_sprint_drain: t("Effect.Sprint.Drain"),
            t_cd_fireball: t("Cooldown.Skill.Fireball"),
            t_cd_shield: t("Cooldown.Skill.Shield"),
            d_damage: t("Data.Damage"),
            d_heal: t("Data.Heal"),
            c_crit: t("GameplayCue.Hit.Crit"),
            c_blocked: t("GameplayCue.Hit.Blocked"),
            c_launch: t("GameplayCue.Fireball.Launch"),
            c_ko: t("GameplayCue.KO"),
            health: a("Health"),
            max_health: a("MaxHealth"),
            mana: a("Mana"),
            stamina: a("Stamina"),
            move_speed: a("MoveSpeed"),
            e_light: e("LightStrike"),
            e_heavy: e("HeavyStrike"),
            e_fireball: e("FireballHit"),
            e_lifesteal: e("LifestealHeal"),
            e_poison: e("Poison"),
            e_stun: e("Stun"),
            e_shield: e("Shield"),
            e_sprint_speed: e("SprintSpeed"),
            e_sprint_drain: e("SprintDrain"),
            e_mana_regen: e("ManaRegen"),
            e_stamina_regen: e("StaminaRegen"),
            abilities: [
                ab("LightAttack"),
                ab("HeavyAttack"),
                ab("Fireball"),
                ab("Shield"),
                ab("Sprint"),
            ],
            sets: [s("Vitals"), s("Resources"), s("Movement"), s("Offense")],
            b_fighter: c.body("Fighter").unwrap_or_else(|e| panic!("duel content: {e}")),
            b_fireball: c.body("Fireball").unwrap_or_else(|e| panic!("duel content: {e}")),
            ev_light: t("Event.Hit.Light"),
            ev_heavy: t("Event.Hit.Heavy"),
            ev_fireball: t("Event.Hit.Fireball"),
            moves: read_moves(&c),
        }
    })
}
