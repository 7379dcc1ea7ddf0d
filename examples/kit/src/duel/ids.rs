//! The duel's content (embedded) and every id its code refers to, resolved once.

use rollback_abilities::{AbilityDefId, AttrId, AttrSetId, EffectDefId, TagId};
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
    pub t_heavy_active: TagId,
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
            t_heavy_active: t("Attack.Heavy.Active"),
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
        }
    })
}
