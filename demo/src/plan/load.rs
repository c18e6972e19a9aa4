//! Reading a plan: parse (TOML, unknown keys, types, located), resolve relative paths,
//! read the manifest file, validate, and locate every problem back in the file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::{PlanError, PlanErrors};
use super::spans;
use super::{ManifestEntry, ManifestFile, Plan};

impl Plan {
    /// Reads, parses and validates a plan file and loads its manifest file: the one call
    /// the command makes. Every problem found is returned, located in the file.
    pub fn load(path: &Path) -> Result<Self, PlanErrors> {
        Self::load_with(path, true)
    }

    /// [`Plan::load`], optionally without reading `storage.manifest_file`: a dry run
    /// prints the plan on a machine that does not have the disk mounted.
    pub fn load_with(path: &Path, read_manifest_file: bool) -> Result<Self, PlanErrors> {
        let fail = |errors| PlanErrors {
            file: path.to_path_buf(),
            errors,
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            fail(vec![PlanError::new(
                "",
                format!("cannot read the plan: {e}"),
            )])
        })?;
        // `plan.toml` has the parent "": resolve against the current directory, made
        // absolute so the resolved paths stay right if the executor changes directory.
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| Path::new("."));
        let base_dir = std::path::absolute(parent).unwrap_or_else(|_| parent.to_path_buf());
        let mut plan = Self::parse(&text, &base_dir).map_err(fail)?;
        let mut errors = plan.validate();
        if errors.is_empty() && read_manifest_file {
            errors = plan.load_manifest_file();
        }
        if errors.is_empty() {
            return Ok(plan);
        }
        spans::locate_all(&text, &mut errors);
        errors.sort_by_key(|e| (e.line.unwrap_or(usize::MAX), e.column.unwrap_or(0)));
        Err(fail(errors))
    }

    /// Parses plan text: syntax, unknown keys and types (the first such problem, which
    /// is all the TOML deserializer can report), with line/column and key path. Relative
    /// local paths are resolved against `base_dir`.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Self, Vec<PlanError>> {
        let mut plan: Self = toml::from_str(text).map_err(|e| vec![spans::from_toml(text, &e)])?;
        plan.resolve_paths(base_dir);
        Ok(plan)
    }

    /// Makes every relative local path absolute against the plan's directory. Node paths
    /// are left alone: validation insists they are absolute.
    fn resolve_paths(&mut self, base_dir: &Path) {
        let resolve = |path: &mut PathBuf| {
            if path.is_relative() {
                *path = base_dir.join(&*path);
            }
        };
        if let Some(path) = self.cluster.kubeconfig.as_mut() {
            resolve(path);
        }
        if let Some(path) = self.executor.work_dir.as_mut() {
            resolve(path);
        }
        if let Some(path) = self.storage.manifest_file.as_mut() {
            resolve(path);
        }
        resolve(&mut self.merge.fingerprint);
        resolve(&mut self.merge.archive);
    }

    /// Reads `storage.manifest_file` into `storage.manifest` (keeping the file name for
    /// reports), checking its entries with the same rules as inline ones.
    pub fn load_manifest_file(&mut self) -> Vec<PlanError> {
        let Some(path) = self.storage.manifest_file.clone() else {
            return Vec::new();
        };
        let key = "storage.manifest_file";
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                return vec![PlanError::new(
                    key,
                    format!("cannot read {}: {e}", path.display()),
                )]
            }
        };
        let manifest: ManifestFile = match serde_json::from_str::<LenientManifestFile>(&text) {
            Ok(manifest) => ManifestFile {
                files: manifest
                    .files
                    .into_iter()
                    .map(|e| ManifestEntry {
                        path: e.path,
                        bytes: e.bytes,
                        sha256: e.sha256,
                    })
                    .collect(),
            },
            Err(e) => {
                return vec![PlanError::new(
                    key,
                    format!(
                        "{} is not a manifest ({{\"files\": [{{\"path\", \"bytes\", \
                         \"sha256\"}}]}}): {e}",
                        path.display()
                    ),
                )]
            }
        };
        let errors = super::validate::manifest_entries(&format!("{key}.files"), &manifest.files);
        if errors.is_empty() {
            self.storage.manifest = manifest.files;
        }
        errors
    }

    /// Every semantic problem of the plan, each with its key path; empty when valid. Pure:
    /// reads no files (see [`Plan::load_manifest_file`]).
    pub fn validate(&self) -> Vec<PlanError> {
        super::validate::validate(self)
    }
}

/// A manifest.json as tools write it: the three fields the check needs, and whatever
/// else the writer records (`records`, `total_bytes`, ...) ignored. Inline plan entries
/// stay strict; a file made by another program may carry more.
#[derive(Debug, Deserialize)]
struct LenientManifestFile {
    files: Vec<LenientManifestEntry>,
}

/// One entry of a [`LenientManifestFile`].
#[derive(Debug, Deserialize)]
struct LenientManifestEntry {
    path: PathBuf,
    bytes: u64,
    sha256: String,
}
