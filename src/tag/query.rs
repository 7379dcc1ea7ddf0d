//! Tag queries and requirements.

use super::set::TagSet;
use serde::{Deserialize, Serialize};

/// One node of a tag query expression (GAS `FGameplayTagQueryExpression`).
///
/// Tag tests are hierarchical: they are evaluated against an ancestor-expanded tag view.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TagQueryExpr {
    /// True if any tag is present (false for an empty list).
    AnyTags(TagSet),
    /// True if every tag is present (true for an empty list).
    AllTags(TagSet),
    /// True if no tag is present (true for an empty list).
    NoTags(TagSet),
    /// True if any sub-expression is true (false for an empty list).
    AnyExpr(Vec<TagQueryExpr>),
    /// True if every sub-expression is true (true for an empty list).
    AllExpr(Vec<TagQueryExpr>),
    /// True if no sub-expression is true (true for an empty list).
    NoExpr(Vec<TagQueryExpr>),
}

impl TagQueryExpr {
    /// Evaluates the expression against an ancestor-expanded tag view given as words.
    pub fn matches_words(&self, view: &[u64]) -> bool {
        match self {
            TagQueryExpr::AnyTags(s) => s.intersects_words(view),
            TagQueryExpr::AllTags(s) => s.is_subset_of_words(view),
            TagQueryExpr::NoTags(s) => !s.intersects_words(view),
            TagQueryExpr::AnyExpr(v) => v.iter().any(|e| e.matches_words(view)),
            TagQueryExpr::AllExpr(v) => v.iter().all(|e| e.matches_words(view)),
            TagQueryExpr::NoExpr(v) => !v.iter().any(|e| e.matches_words(view)),
        }
    }

    /// Every tag the expression mentions.
    pub fn tags(&self, out: &mut TagSet) {
        match self {
            TagQueryExpr::AnyTags(s) | TagQueryExpr::AllTags(s) | TagQueryExpr::NoTags(s) => {
                out.union_with(s)
            }
            TagQueryExpr::AnyExpr(v) | TagQueryExpr::AllExpr(v) | TagQueryExpr::NoExpr(v) => {
                v.iter().for_each(|e| e.tags(out))
            }
        }
    }
}

/// A tag query. The empty query matches nothing (the UE 5.3 rule, G-25).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TagQuery {
    /// The root expression; `None` is the empty query.
    pub expr: Option<TagQueryExpr>,
}

impl TagQuery {
    /// The empty query (matches nothing).
    pub const EMPTY: TagQuery = TagQuery { expr: None };

    /// Whether the query is empty.
    pub fn is_empty(&self) -> bool {
        self.expr.is_none()
    }

    /// Evaluates the query against an ancestor-expanded tag view.
    pub fn matches(&self, expanded: &TagSet) -> bool {
        self.matches_words(expanded.words())
    }

    /// Evaluates the query against an ancestor-expanded tag view given as words.
    pub fn matches_words(&self, view: &[u64]) -> bool {
        self.expr.as_ref().is_some_and(|e| e.matches_words(view))
    }
}

/// Tag requirements (GAS `FGameplayTagRequirements`): every `require_all` tag present, no
/// `ignore_any` tag present, and, if a query is set, the query matches. Empty requirements pass.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TagRequirements {
    /// Tags that must all be present (hierarchical match).
    pub require_all: TagSet,
    /// Tags none of which may be present (hierarchical match).
    pub ignore_any: TagSet,
    /// An optional query that must match.
    pub query: Option<TagQuery>,
}

impl TagRequirements {
    /// Requirements that always pass.
    pub const NONE: TagRequirements =
        TagRequirements { require_all: TagSet::EMPTY, ignore_any: TagSet::EMPTY, query: None };

    /// Whether these requirements pass for nothing can fail them.
    pub fn is_empty(&self) -> bool {
        self.require_all.is_empty() && self.ignore_any.is_empty() && self.query.is_none()
    }

    /// Whether an ancestor-expanded tag view satisfies the requirements.
    pub fn passes_words(&self, view: &[u64]) -> bool {
        self.require_all.is_subset_of_words(view)
            && !self.ignore_any.intersects_words(view)
            && self.query.as_ref().is_none_or(|q| q.matches_words(view))
    }

    /// Whether an ancestor-expanded tag set satisfies the requirements.
    pub fn passes(&self, expanded: &TagSet) -> bool {
        self.passes_words(expanded.words())
    }

    /// Every tag the requirements mention.
    pub fn tags(&self) -> TagSet {
        let mut s = self.require_all.union(&self.ignore_any);
        if let Some(e) = self.query.as_ref().and_then(|q| q.expr.as_ref()) {
            e.tags(&mut s);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::TagId;

    fn set(ids: &[u16]) -> TagSet {
        ids.iter().map(|i| TagId(*i)).collect()
    }

    #[test]
    fn query_semantics() {
        let view = set(&[1, 2]);
        assert!(!TagQuery::EMPTY.matches(&view), "empty query matches nothing (G-25)");
        let q = |e| TagQuery { expr: Some(e) };
        assert!(q(TagQueryExpr::AnyTags(set(&[2, 9]))).matches(&view));
        assert!(!q(TagQueryExpr::AnyTags(set(&[]))).matches(&view));
        assert!(q(TagQueryExpr::AllTags(set(&[]))).matches(&view));
        assert!(!q(TagQueryExpr::AllTags(set(&[1, 9]))).matches(&view));
        assert!(q(TagQueryExpr::NoTags(set(&[9]))).matches(&view));
        assert!(
            q(TagQueryExpr::AllExpr(vec![
                TagQueryExpr::AnyTags(set(&[1])),
                TagQueryExpr::NoExpr(vec![TagQueryExpr::AllTags(set(&[3]))]),
            ]))
            .matches(&view)
        );
        assert!(!q(TagQueryExpr::AnyExpr(vec![])).matches(&view));
    }

    #[test]
    fn requirements() {
        let view = set(&[1, 2]);
        assert!(TagRequirements::NONE.passes(&view));
        let r = TagRequirements { require_all: set(&[1]), ignore_any: set(&[3]), query: None };
        assert!(r.passes(&view));
        let r2 = TagRequirements { ignore_any: set(&[2]), ..r.clone() };
        assert!(!r2.passes(&view));
        let r3 = TagRequirements { query: Some(TagQuery::EMPTY), ..r };
        assert!(!r3.passes(&view), "an explicitly empty query fails");
    }
}
