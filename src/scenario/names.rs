//! The names a scenario file uses, looked up in its content (entities, tags, attributes,
//! effects, abilities), and every problem located in the file by its path.

use super::{ScenarioError, ScenarioErrorKind as K};
use crate::content::error::{Clip, suggest};
use crate::content::locate::{PathSeg, locate, render};
use crate::content::{Content, ContentError};
use crate::id::{AbilityDefId, AttrId, EffectDefId, TagId};
use crate::tag::TagSet;

/// The path segment of field `k`.
pub(crate) fn key(k: &str) -> PathSeg {
    PathSeg::Key(k.to_string())
}

/// Validation context: the source for locating paths, the content for names.
pub(crate) struct Cx<'a> {
    pub file: &'a str,
    pub source: &'a str,
    pub content: &'a Content,
    pub entities: Vec<String>,
}

impl Cx<'_> {
    pub(crate) fn err(
        &self,
        kind: K,
        path: &[PathSeg],
        message: impl Into<String>,
    ) -> ScenarioError {
        let (pos, _) = locate(self.source, path);
        ScenarioError {
            kind,
            file: self.file.to_string(),
            line: pos.line,
            col: pos.col,
            path: render(path),
            message: message.into(),
        }
    }

    pub(crate) fn named<T>(
        &self,
        path: &[PathSeg],
        r: Result<T, ContentError>,
    ) -> Result<T, ScenarioError> {
        r.map_err(|e| self.err(K::UnknownName, path, e.message))
    }

    pub(crate) fn entity(&self, path: &[PathSeg], name: &str) -> Result<usize, ScenarioError> {
        if let Some(i) = self.entities.iter().position(|n| n == name) {
            return Ok(i);
        }
        let mut msg = format!("no entity named \"{}\"", Clip(name));
        if let Some(s) = suggest(name, self.entities.iter().map(String::as_str)) {
            msg.push_str(&format!(" (did you mean \"{}\"?)", Clip(s)));
        } else if self.entities.is_empty() {
            msg.push_str(" (the scenario declares no entities: add them under `entities`)");
        } else {
            msg.push_str(&format!(" (entities: {})", self.entities.join(", ")));
        }
        Err(self.err(K::UnknownName, path, msg))
    }

    pub(crate) fn tag(&self, path: &[PathSeg], name: &str) -> Result<TagId, ScenarioError> {
        self.named(path, self.content.tag(name))
    }

    pub(crate) fn tags(&self, path: &[PathSeg], names: &[String]) -> Result<TagSet, ScenarioError> {
        let mut set = TagSet::EMPTY;
        for (i, n) in names.iter().enumerate() {
            let mut p = path.to_vec();
            p.push(PathSeg::Index(i));
            set.insert(self.tag(&p, n)?);
        }
        Ok(set)
    }

    pub(crate) fn attr(&self, path: &[PathSeg], name: &str) -> Result<AttrId, ScenarioError> {
        self.named(path, self.content.attr(name))
    }

    pub(crate) fn effect(
        &self,
        path: &[PathSeg],
        name: &str,
    ) -> Result<EffectDefId, ScenarioError> {
        self.named(path, self.content.effect(name))
    }

    pub(crate) fn ability(
        &self,
        path: &[PathSeg],
        name: &str,
    ) -> Result<AbilityDefId, ScenarioError> {
        self.named(path, self.content.ability(name))
    }
}
