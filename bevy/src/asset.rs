//! Content as a Bevy asset: [`ContentAsset`], loaded from `.gas.ron` files by [`ContentLoader`]
//! (the crate's RON content, frozen), for a plugin made with
//! [`AbilitiesPlugin::from_asset`](crate::AbilitiesPlugin::from_asset).

use bevy::asset::io::Reader;
use bevy::asset::{Asset, AssetLoader, LoadContext};
use bevy::reflect::TypePath;
use rollback_abilities::{Content, ContentBuilder};
use std::sync::Arc;

/// The crate's content, frozen, as a Bevy asset.
#[derive(Asset, TypePath, Clone, Debug)]
pub struct ContentAsset(pub Arc<Content>);

/// Loads a RON content file (`*.gas.ron`) into a [`ContentAsset`]; a file that does not parse
/// or build fails with an error naming `file:line:col` (Bevy's asset server logs it, and the
/// plugin sends it as a [`MatchEnded`](crate::MatchEnded) or
/// [`ContentReloaded`](crate::ContentReloaded) message).
#[derive(TypePath, Default, Clone, Copy, Debug)]
pub struct ContentLoader;

/// Why a content file could not be loaded: its text names the file, line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentLoadError(pub String);

impl core::fmt::Display for ContentLoadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ContentLoadError {}

/// Freezes the content of the file `name` holding `bytes`.
pub(crate) fn content_of(name: String, bytes: Vec<u8>) -> Result<Content, ContentLoadError> {
    let text = String::from_utf8(bytes)
        .map_err(|e| ContentLoadError(format!("{name}: the content is not UTF-8: {e}")))?;
    ContentBuilder::new().file(name, text).build().map_err(|e| ContentLoadError(e.to_string()))
}

impl AssetLoader for ContentLoader {
    type Asset = ContentAsset;
    type Settings = ();
    type Error = ContentLoadError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        _settings: &(),
        load_context: &mut LoadContext<'_>,
    ) -> Result<ContentAsset, ContentLoadError> {
        let name = load_context.path().to_string();
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| ContentLoadError(format!("{name}: cannot read the content: {e}")))?;
        content_of(name, bytes).map(|c| ContentAsset(Arc::new(c)))
    }

    fn extensions(&self) -> &[&str] {
        &["gas.ron"]
    }
}
