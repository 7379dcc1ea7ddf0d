//! Gameplay tags: the hierarchical registry, tag sets, queries and requirements.
//!
//! Tags are dotted names (`State.Debuff.Stun`). The registry assigns ids by sorting full names
//! segment by segment, with implicit parents inserted, so every peer that loaded the same names
//! agrees on every id, and a tag's descendants always occupy the id range right after it
//! (`State` < `State.Debuff` < `State.Debuff.Stun` < `State.Dead`). That makes "is `a` a
//! descendant of `b`" a range check and lets per-entity counts be plain dense arrays.
//!
//! # Matching rules (the same as GAS)
//!
//! A container holding `A.1` answers "has `A`" with true (hierarchical match); the exact forms
//! (`has_exact`, …) do not. [`TagContainer`] keeps both the explicit tags and their
//! ancestor-expanded view so either question is a bitset test.

mod query;
mod registry;
mod set;

pub use query::{TagQuery, TagQueryExpr, TagRequirements};
pub(crate) use registry::validate_name as registry_validate_name;
pub use registry::{TagRegistry, TagRegistryError};
pub use set::{MAX_TAGS, TagContainer, TagSet};

/// Declares a struct of typed tag constants resolved from frozen content by name.
///
/// ```
/// use rollback_abilities::{declare_tags, Content};
///
/// declare_tags! {
///     /// The tags this game's code refers to.
///     pub struct Tags {
///         stun: "State.Debuff.Stun",
///         dead: "State.Dead",
///     }
/// }
///
/// let content = Content::from_ron_str("(tags: [\"State.Debuff.Stun\", \"State.Dead\"])")?;
/// let tags = Tags::resolve(&content)?;
/// assert!(content.tags().is_descendant_or_self(tags.stun, content.tag("State")?));
/// // The names can also be registered as native tags before content is frozen:
/// assert_eq!(Tags::NAMES, &["State.Debuff.Stun", "State.Dead"]);
/// # Ok::<(), rollback_abilities::ContentError>(())
/// ```
#[macro_export]
macro_rules! declare_tags {
    ($(#[$m:meta])* $vis:vis struct $name:ident { $($field:ident : $tag:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis struct $name {
            $(
                #[doc = concat!("The tag `", $tag, "`.")]
                pub $field: $crate::TagId,
            )*
        }

        impl $name {
            /// Every tag name this struct refers to, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($tag),*];

            /// Resolves every name against frozen content; an unknown name is an error.
            pub fn resolve(content: &$crate::Content) -> Result<Self, $crate::ContentError> {
                Ok(Self { $($field: content.tag($tag)?,)* })
            }
        }
    };
}
