//! The inspector: GAS's `showdebug abilitysystem` for any entity, headless (F-DBG-01,
//! F-DBG-02, F-DBG-06).

use crate::ability::ActivationFailure;
use crate::id::{AbilityHandle, Entity, TagId};
use crate::num::{Fx, to_decimal};
use crate::tag::TagSet;
use crate::world::{Game, World};
use core::fmt;
use serde::Serialize;

/// One tag on an entity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TagView {
    /// The tag's name.
    pub name: String,
    /// Its own count (loose + grants).
    pub count: u32,
    /// Its count with descendants.
    pub hierarchical: u32,
}

/// One active effect.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EffectView {
    /// The definition's name.
    pub name: String,
    /// Its application sequence number.
    pub seq: u32,
    /// Stacks.
    pub stacks: u16,
    /// Level.
    pub level: u16,
    /// Remaining frames (`None`: infinite).
    pub remaining: Option<u32>,
    /// Total frames (`None`: infinite).
    pub duration: Option<u32>,
    /// Switched off by ongoing requirements.
    pub inhibited: bool,
    /// Granted tags.
    pub granted_tags: Vec<String>,
    /// Modifiers as `attribute op magnitude`.
    pub modifiers: Vec<String>,
}

/// One running task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TaskView {
    /// The task's kind.
    pub kind: String,
    /// The behaviour's id for it.
    pub user_id: u16,
    /// The frame it started.
    pub started: u32,
}

/// One granted ability.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AbilityView {
    /// The definition's name.
    pub name: String,
    /// Its spec slot.
    pub slot: u16,
    /// Level.
    pub level: u16,
    /// Active now.
    pub active: bool,
    /// Activations so far.
    pub activations: u32,
    /// The bound input.
    pub input: Option<u8>,
    /// Remaining cooldown `(remaining, total)`.
    pub cooldown: Option<(u32, u32)>,
    /// Why it could not activate right now (`None`: it could).
    pub blocked_by: Option<String>,
    /// The last activation attempt: frame and outcome.
    pub last_attempt: Option<(u32, String)>,
    /// Its running tasks.
    pub tasks: Vec<TaskView>,
}

/// One hit, hurt or push box an entity has out (see [`World::boxes`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BoxView {
    /// `Hit`, `Hurt` or `Push`.
    pub kind: String,
    /// Where it comes from: `body NAME` or `timeline NAME frame F`, and its index there.
    pub source: String,
    /// Its placed rectangle `[x0, x1) × [y0, y1)`, as decimals.
    pub rect: [String; 4],
    /// What a hit box's hit carries (empty for other boxes).
    pub hit: String,
}

/// Everything about one entity, as `showdebug abilitysystem` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DebugView {
    /// The entity.
    pub entity: Entity,
    /// The frame.
    pub frame: u32,
    /// Whether it is alive.
    pub alive: bool,
    /// Attributes: name, base, current.
    pub attributes: Vec<(String, String, String)>,
    /// Tags present.
    pub tags: Vec<TagView>,
    /// Active effects in application order.
    pub effects: Vec<EffectView>,
    /// Granted abilities in slot order.
    pub abilities: Vec<AbilityView>,
    /// Its hit, hurt and push boxes out (in the box pass's order; empty without boxes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<BoxView>,
}

/// The boxes `e` has out, as [`BoxView`]s.
fn box_views<G: Game>(world: &World<G>, e: Entity) -> Vec<BoxView> {
    use crate::world::BoxSource;
    let c = world.content();
    world
        .boxes()
        .iter()
        .filter(|b| b.entity == e)
        .map(|b| {
            let source = match b.source {
                BoxSource::Body(id) => format!(
                    "body {} box {}",
                    c.body_defs().get(usize::from(id.0)).map_or("?", |d| d.name.as_str()),
                    b.index
                ),
                BoxSource::Timeline { timeline, frame } => format!(
                    "timeline {} frame {frame} box {}",
                    c.timeline_defs().get(usize::from(timeline)).map_or("?", |d| d.name.as_str()),
                    b.index
                ),
            };
            let mut hit = Vec::new();
            if b.kind == crate::content::boxes::BoxKind::Hit {
                if let Some(ef) = b.hit.effect {
                    hit.push(format!("effect {}", c.effect_name(ef)));
                }
                if let Some(t) = b.hit.event {
                    hit.push(format!("event {}", c.tags().name(t)));
                }
                hit.push(format!("damage {}", to_decimal(b.hit.damage)));
                if b.hit.pushback != Fx::ZERO {
                    hit.push(format!("pushback {}", to_decimal(b.hit.pushback)));
                }
                if b.hit.rehit != 0 {
                    hit.push(format!("rehit every {} frames", b.hit.rehit));
                }
                if b.instigator != e {
                    hit.push(format!("by {}", b.instigator));
                }
            }
            let r = b.rect;
            BoxView {
                kind: format!("{:?}", b.kind),
                source,
                rect: [r.x0, r.x1, r.y0, r.y1].map(to_decimal),
                hit: hit.join(", "),
            }
        })
        .collect()
}

fn task_kind(k: u16) -> &'static str {
    use crate::ability::task::kind::*;
    match k {
        WAIT_FRAMES => "WaitFrames",
        REPEAT => "Repeat",
        WAIT_EVENT => "WaitEvent",
        WAIT_TAG_ADDED => "WaitTagAdded",
        WAIT_TAG_REMOVED => "WaitTagRemoved",
        WAIT_TAG_QUERY => "WaitTagQuery",
        WAIT_ATTRIBUTE => "WaitAttribute",
        WAIT_INPUT => "WaitInput",
        WAIT_CONFIRM_CANCEL => "WaitConfirmCancel",
        WAIT_EFFECT_ADDED => "WaitEffectAdded",
        WAIT_EFFECT_REMOVED => "WaitEffectRemoved",
        WAIT_STACK_CHANGE => "WaitStackChange",
        WAIT_DAMAGE => "WaitDamage",
        PLAY_TIMELINE => "PlayTimeline",
        WAIT_TARGET_DATA => "WaitTargetData",
        ROOT_MOTION => "RootMotion",
        _ => "?",
    }
}

/// Why an ability cannot activate, naming the tags behind a tag failure: the owner's tags that
/// match the ability's `activation_blocked_tags`, the `activation_required_tags` it lacks, the
/// cooldown tags it carries. Other failures read as their `Display`.
fn explain<G: Game>(world: &World<G>, h: AbilityHandle, failure: ActivationFailure) -> String {
    let c = world.content();
    let Some(def) = world.ability(h).map(|s| c.ability_def(s.def)) else {
        return failure.to_string();
    };
    let reg = c.tags();
    let quoted = |tags: &[TagId]| {
        tags.iter().map(|t| format!("`{}`", reg.name(*t))).collect::<Vec<_>>().join(", ")
    };
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    // The owner's own tags matching `list` (a tag matches itself and its ancestors), each with
    // the listed ancestor it matched through when that is not the tag itself.
    let held = |list: &TagSet| -> Vec<String> {
        let mut out = Vec::new();
        for t in world.explicit_tags(h.owner).iter() {
            if list.contains(t) {
                out.push(format!("`{}`", reg.name(t)));
            } else if let Some(l) = list.iter().find(|l| reg.is_descendant_or_self(t, *l)) {
                out.push(format!("`{}` (under `{}`)", reg.name(t), reg.name(l)));
            }
        }
        out
    };
    match failure {
        ActivationFailure::BlockedByTags => {
            let tags = held(&def.activation_blocked_tags);
            if tags.is_empty() {
                return failure.to_string();
            }
            format!(
                "blocked by the owner's tag{} {}, listed in the ability's activation_blocked_tags",
                plural(tags.len()),
                tags.join(", ")
            )
        }
        ActivationFailure::MissingTags => {
            let owner = world.tags(h.owner);
            let missing: Vec<TagId> =
                def.activation_required_tags.iter().filter(|t| !owner.contains(*t)).collect();
            if missing.is_empty() {
                return failure.to_string();
            }
            format!(
                "the owner lacks the tag{} {}, listed in the ability's activation_required_tags",
                plural(missing.len()),
                quoted(&missing)
            )
        }
        ActivationFailure::OnCooldown => {
            // The ability's cooldown tags as the activation check read them: the definition's,
            // or the ones set at run time (`World::set_cooldown_tags`).
            let cooldown = world.ability_cooldown_tags(h).unwrap_or(def.all_cooldown_tags);
            let tags = held(&cooldown);
            if tags.is_empty() {
                return failure.to_string();
            }
            format!(
                "on cooldown: the owner has the cooldown tag{} {}",
                plural(tags.len()),
                tags.join(", ")
            )
        }
        other => other.to_string(),
    }
}

/// The inspector view of any entity (works headless, for every entity alike).
///
/// ```
/// use rollback_abilities::{Content, Game, Hooks, World, WorldConfig, debug::debug_view};
/// # struct G; impl Game for G { type Input = u8; type Component = (); type Global = (); }
/// let content = std::sync::Arc::new(Content::from_ron_str(r#"(
///     attribute_sets: { "V": (attributes: { "Health": (default: 10) }) },
/// )"#)?);
/// let mut w = World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
/// let e = w.spawn_actor(&[content.attr_set("V")?]).unwrap();
/// let view = debug_view(&w, e);
/// assert_eq!(view.attributes, vec![("Health".to_string(), "10".to_string(), "10".to_string())]);
/// println!("{view}");
/// # Ok::<(), rollback_abilities::ContentError>(())
/// ```
pub fn debug_view<G: Game>(world: &World<G>, e: Entity) -> DebugView {
    let c = world.content();
    let frame = world.frame();
    let mut attributes = Vec::new();
    for (i, def) in c.attr_defs().iter().enumerate() {
        if let Some(v) = world.attr_value(e, crate::id::AttrId(i as u16)) {
            attributes.push((def.name.clone(), to_decimal(v.base), to_decimal(v.current)));
        }
    }
    let tags = world
        .tags(e)
        .iter()
        .map(|t| TagView {
            name: c.tags().name(t).to_string(),
            count: world.tag_count_exact(e, t),
            hierarchical: world.tag_count(e, t),
        })
        .collect();
    let effects = world
        .effects(e)
        .iter()
        .zip(world.effect_timers(e))
        .map(|(ef, t)| {
            let def = c.effect_defs().get(ef.def.index());
            let h = ef.handle(e);
            EffectView {
                name: c.effect_name(ef.def).to_string(),
                seq: ef.seq,
                stacks: ef.stacks,
                level: ef.level,
                remaining: t.remaining(frame),
                duration: (ef.duration != crate::num::NEVER).then_some(ef.duration),
                inhibited: ef.is_inhibited(),
                granted_tags: def
                    .map(|d| {
                        d.granted_tags
                            .explicit
                            .iter()
                            .map(|t| c.tags().name(t).to_string())
                            .collect()
                    })
                    .unwrap_or_default(),
                modifiers: def
                    .map(|d| {
                        d.modifiers
                            .iter()
                            .enumerate()
                            .map(|(i, m)| {
                                let mag = world.effect_magnitude(h, i).unwrap_or(Fx::ZERO);
                                format!("{} {:?} {}", c.attr_name(m.attr), m.op, to_decimal(mag))
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect();
    let abilities = world
        .abilities(e)
        .map(|(h, s)| {
            let now = world.can_activate(h, None).err();
            (h, s, now, now.map(|f| explain(world, h, f)))
        })
        .map(|(h, s, now, blocked_by)| AbilityView {
            name: c.ability_name(s.def).to_string(),
            slot: h.slot,
            level: s.level,
            active: s.is_active(),
            activations: s.activation_serial,
            input: s.input_id(),
            cooldown: world.ability_cooldown_remaining(h),
            last_attempt: world.last_activation(h).map(|r| {
                (
                    r.frame,
                    match r.result {
                        Ok(serial) => format!("activated (serial {serial})"),
                        // A failure in the frame just stepped for the reason that holds now is
                        // explained with the tags of now; an older one only by its reason.
                        Err(f) if r.frame == frame && Some(f) == now => {
                            format!("failed: {}", blocked_by.clone().unwrap_or_default())
                        }
                        Err(f) => format!("failed: {f}"),
                    },
                )
            }),
            blocked_by,
            tasks: world
                .tasks_of(h)
                .map(|(_, t)| TaskView {
                    kind: task_kind(t.kind).to_string(),
                    user_id: t.user_id,
                    started: t.started,
                })
                .collect(),
        })
        .collect();
    let boxes = box_views(world, e);
    DebugView {
        entity: e,
        frame,
        alive: world.is_alive(e),
        attributes,
        tags,
        effects,
        abilities,
        boxes,
    }
}

impl fmt::Display for DebugView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} at frame {}{}",
            self.entity,
            self.frame,
            if self.alive { "" } else { " (dead handle)" }
        )?;
        writeln!(f, "  attributes:")?;
        for (n, b, cur) in &self.attributes {
            writeln!(f, "    {n:<20} base {b:>12}  current {cur:>12}")?;
        }
        writeln!(f, "  tags:")?;
        for t in &self.tags {
            writeln!(f, "    {:<32} x{} ({} with children)", t.name, t.count, t.hierarchical)?;
        }
        writeln!(f, "  effects:")?;
        for e in &self.effects {
            let rem = match (e.remaining, e.duration) {
                (Some(r), Some(d)) => format!("{r} of {d} frames left"),
                _ => "infinite".to_string(),
            };
            writeln!(
                f,
                "    #{:<4} {:<20} x{} lvl {} {rem}{} tags {:?} mods {:?}",
                e.seq,
                e.name,
                e.stacks,
                e.level,
                if e.inhibited { " INHIBITED" } else { "" },
                e.granted_tags,
                e.modifiers
            )?;
        }
        writeln!(f, "  abilities:")?;
        for a in &self.abilities {
            writeln!(
                f,
                "    [{}] {:<20} lvl {} {}{}{}{}",
                a.slot,
                a.name,
                a.level,
                if a.active { "ACTIVE" } else { "idle" },
                a.cooldown
                    .map(|(r, t)| format!("; cooldown {r} of {t} frames left"))
                    .unwrap_or_default(),
                a.blocked_by.as_ref().map(|b| format!("; can't activate: {b}")).unwrap_or_default(),
                a.last_attempt
                    .as_ref()
                    .map(|(f, o)| match (&a.blocked_by, o.strip_prefix("failed: ")) {
                        (Some(now), Some(then)) if now == then => {
                            format!("; last attempt at frame {f}: failed for that reason")
                        }
                        _ => format!("; last attempt at frame {f}: {o}"),
                    })
                    .unwrap_or_default(),
            )?;
            for t in &a.tasks {
                writeln!(f, "        task {} #{} since {}", t.kind, t.user_id, t.started)?;
            }
        }
        if !self.boxes.is_empty() {
            writeln!(f, "  boxes:")?;
            for b in &self.boxes {
                let [x0, x1, y0, y1] = &b.rect;
                let hit = if b.hit.is_empty() { String::new() } else { format!("; {}", b.hit) };
                writeln!(f, "    {:<4} x [{x0}, {x1}) y [{y0}, {y1})  {}{hit}", b.kind, b.source)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Content, Hooks, WorldConfig};
    use std::sync::Arc;

    struct G;
    impl Game for G {
        type Input = u8;
        type Component = ();
        type Global = ();
    }

    /// The inspector names the tags behind a tag failure, says which frames are left, and
    /// renders the entity as index and generation.
    #[test]
    fn failures_name_their_tags() {
        let content = Arc::new(
            Content::from_ron_str(
                r#"(
                tags: ["State.Debuff.Stun", "State.Ready", "Cooldown.Strike"],
                attribute_sets: { "V": (attributes: { "Health": (default: 10) }) },
                effects: {
                    "StrikeCooldown": (duration: Frames(6), granted_tags: ["Cooldown.Strike"]),
                },
                abilities: {
                    "Strike": (activation_blocked_tags: ["State.Debuff"],
                               activation_required_tags: ["State.Ready"],
                               cooldown: "StrikeCooldown"),
                },
            )"#,
            )
            .unwrap(),
        );
        let mut w =
            World::<G>::new(content.clone(), &Hooks::new(), WorldConfig::default()).unwrap();
        let e = w.spawn_actor(&[content.attr_set("V").unwrap()]).unwrap();
        w.grant_ability(e, content.ability("Strike").unwrap(), 1).unwrap();
        let tag = |n: &str| content.tag(n).unwrap();
        let blocked = |w: &World<G>| debug_view(w, e).abilities[0].blocked_by.clone().unwrap();

        assert_eq!(
            blocked(&w),
            "the owner lacks the tag `State.Ready`, listed in the ability's \
             activation_required_tags"
        );
        w.set_loose_tag_count(e, tag("State.Ready"), 1);
        w.set_loose_tag_count(e, tag("State.Debuff.Stun"), 1);
        assert_eq!(
            blocked(&w),
            "blocked by the owner's tag `State.Debuff.Stun` (under `State.Debuff`), listed in the \
             ability's activation_blocked_tags"
        );
        w.set_loose_tag_count(e, tag("State.Debuff.Stun"), 0);
        w.set_loose_tag_count(e, tag("Cooldown.Strike"), 1);
        assert_eq!(blocked(&w), "on cooldown: the owner has the cooldown tag `Cooldown.Strike`");
        w.set_loose_tag_count(e, tag("Cooldown.Strike"), 0);
        assert_eq!(debug_view(&w, e).abilities[0].blocked_by, None);

        // A timed effect shows the frames left of its total; the header names the entity.
        let spec = w.make_spec(content.effect("StrikeCooldown").unwrap(), 1, e);
        w.apply_effect(spec, e).unwrap();
        w.step(&[]);
        w.step(&[]);
        let text = debug_view(&w, e).to_string();
        assert!(
            text.starts_with(&format!("entity {} (generation 1) at frame 1\n", e.index)),
            "{text}"
        );
        assert!(
            text.contains(" 5 of 6 frames left ") && text.contains("cooldown 5 of 6 frames left")
        );
        assert!(text.contains("can't activate: on cooldown"), "{text}");
        assert!(!text.contains('/'), "{text}");
    }
}
