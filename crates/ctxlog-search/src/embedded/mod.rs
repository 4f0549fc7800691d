//! The embedded store's index, tantivy's, on disk: opened, made when
//! missing, made again when it does not open or is of another schema; what
//! it has indexed of each session (its watermarks, kept in each commit's
//! payload, so they are exactly as durable as what they describe); its one
//! writer at a time. `lookup.rs` and `writer.rs` are its [`crate::Lookup`]
//! and [`crate::Engine`].
//!
//! Files:
//! - `query.rs`: A read query (`crate::query::Parsed`) as tantivy runs it,
//!   limited to a request's sessions and times.
//! - `schema.rs`: The index's schema.

use crate::error::SearchError;
use crate::lookup::Watermarks;
use schema::{Fields, SCHEMA_VERSION};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tantivy::collector::{DocSetCollector, TopDocs};
use tantivy::query::{Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

mod lookup;
mod query;
pub(crate) mod schema;
mod writer;

pub use writer::EmbeddedWriter;

/// Memory the writer may use before it writes a segment (tantivy's floor
/// is 15 MB per thread).
const WRITER_MEMORY: usize = 48 * 1024 * 1024;

/// The bytes of every file under `dir` (a store with its index, say).
pub fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => bytes_under(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Runs a call into tantivy on the index at `dir`: tantivy panics on some
/// damaged files (a zeroed segment overflows a varint), and that panic is
/// an error saying the index is damaged, never a crash.
pub(crate) fn guarded<T>(
    dir: &Path,
    f: impl FnOnce() -> Result<T, SearchError>,
) -> Result<T, SearchError> {
    ctxlog_store::backend::quietly(f).unwrap_or_else(|message| {
        Err(SearchError::Index {
            path: dir.to_owned(),
            source: tantivy::TantivyError::InternalError(format!(
                "it is damaged (tantivy gave up reading it: {message})"
            )),
        })
    })
}

/// Why an index was made anew when opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remade {
    /// There was none.
    Missing,
    /// It did not open, or its commit does not read: tantivy's words.
    Damaged(String),
    /// It was written with another schema.
    OtherSchema(u32),
}

/// The search index of one store.
pub struct SearchIndex {
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    pub(crate) fields: Fields,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("dir", &self.dir)
            .finish()
    }
}

impl SearchIndex {
    /// Opens the index in `dir`, making it when missing and making it anew
    /// when it does not open or was written with another schema (the log
    /// has everything it held); says which.
    pub fn open(dir: &Path) -> Result<(SearchIndex, Option<Remade>), SearchError> {
        if !dir.join("meta.json").exists() {
            return Ok((SearchIndex::remake(dir)?, Some(Remade::Missing)));
        }
        match SearchIndex::open_existing(dir) {
            Ok(idx) => match idx.watermarks() {
                Ok(w) if w.schema == SCHEMA_VERSION => Ok((idx, None)),
                Ok(w) => {
                    drop(idx);
                    Ok((
                        SearchIndex::remake(dir)?,
                        Some(Remade::OtherSchema(w.schema)),
                    ))
                }
                Err(e) => {
                    drop(idx);
                    Ok((
                        SearchIndex::remake(dir)?,
                        Some(Remade::Damaged(e.to_string())),
                    ))
                }
            },
            Err(e) => Ok((
                SearchIndex::remake(dir)?,
                Some(Remade::Damaged(e.to_string())),
            )),
        }
    }

    /// Removes whatever is in `dir` and makes an empty index there.
    pub fn remake(dir: &Path) -> Result<SearchIndex, SearchError> {
        let io = |source| SearchError::Io {
            path: dir.to_owned(),
            source,
        };
        match std::fs::remove_dir_all(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io)?;
        }
        let (schema, fields) = Fields::build();
        let index = Index::create_in_dir(dir, schema).map_err(SearchError::index(dir))?;
        let idx = SearchIndex::with(dir, index, fields)?;
        // An empty first commit, so the schema's version is on disk.
        let mut writer = idx.tantivy_writer(Duration::ZERO)?;
        idx.commit(&mut writer, &Watermarks::default())?;
        drop(writer);
        idx.keep_private()?;
        Ok(idx)
    }

    /// Opens the index in `dir` as it is, never making it: for a check
    /// that must not change what it looks at.
    pub fn open_existing(dir: &Path) -> Result<SearchIndex, SearchError> {
        guarded(dir, || SearchIndex::open_as_is(dir))
    }

    fn open_as_is(dir: &Path) -> Result<SearchIndex, SearchError> {
        let index = Index::open_in_dir(dir).map_err(SearchError::index(dir))?;
        let (_, fields) = Fields::build();
        if index.schema() != Fields::build().0 {
            return Err(SearchError::Index {
                path: dir.to_owned(),
                source: tantivy::TantivyError::SchemaError(
                    "the index's fields are not this version's".into(),
                ),
            });
        }
        SearchIndex::with(dir, index, fields)
    }

    fn with(dir: &Path, index: Index, fields: Fields) -> Result<SearchIndex, SearchError> {
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(SearchError::index(dir))?;
        Ok(SearchIndex {
            dir: dir.to_owned(),
            index,
            reader,
            fields,
        })
    }

    /// The index's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the last commit says was indexed.
    pub fn watermarks(&self) -> Result<Watermarks, SearchError> {
        let metas = self
            .index
            .load_metas()
            .map_err(SearchError::index(&self.dir))?;
        match metas.payload {
            None => Ok(Watermarks {
                schema: SCHEMA_VERSION,
                ..Watermarks::default()
            }),
            Some(p) => serde_json::from_str(&p).map_err(|e| SearchError::Index {
                path: self.dir.clone(),
                source: tantivy::TantivyError::InternalError(format!(
                    "its watermarks do not read: {e}"
                )),
            }),
        }
    }

    /// tantivy's writer, waiting up to `wait` while another process holds
    /// it.
    fn tantivy_writer(&self, wait: Duration) -> Result<IndexWriter, SearchError> {
        let deadline = Instant::now() + wait;
        loop {
            match self
                .index
                .writer_with_num_threads::<TantivyDocument>(2, WRITER_MEMORY)
            {
                Ok(w) => return Ok(w),
                Err(tantivy::TantivyError::LockFailure(..)) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(tantivy::TantivyError::LockFailure(..)) => {
                    return Err(SearchError::Busy {
                        index: self.dir.display().to_string(),
                    })
                }
                Err(e) => return Err(SearchError::index(&self.dir)(e)),
            }
        }
    }

    /// Commits what `writer` holds with `marks`, and lets this handle's
    /// searches see it.
    pub(crate) fn commit(
        &self,
        writer: &mut IndexWriter,
        marks: &Watermarks,
    ) -> Result<(), SearchError> {
        let payload = serde_json::to_string(&Watermarks {
            schema: SCHEMA_VERSION,
            ..marks.clone()
        })
        .unwrap_or_default();
        guarded(&self.dir, || {
            let mut prepared = writer
                .prepare_commit()
                .map_err(SearchError::index(&self.dir))?;
            prepared.set_payload(&payload);
            prepared.commit().map_err(SearchError::index(&self.dir))
        })?;
        self.reload()
    }

    /// Sees what was committed since (by this process or another).
    pub fn reload(&self) -> Result<(), SearchError> {
        guarded(&self.dir, || {
            self.reader.reload().map_err(SearchError::index(&self.dir))
        })
    }

    /// A searcher over the last commit seen.
    pub(crate) fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }

    /// The documents that have `term`, at most `limit`.
    pub(crate) fn docs_with(
        &self,
        term: Term,
        limit: usize,
    ) -> Result<Vec<TantivyDocument>, SearchError> {
        let query = TermQuery::new(term, IndexRecordOption::Basic);
        let top = TopDocs::with_limit(limit.max(1)).order_by_score();
        self.search_and_read(&query, &top, |found| {
            found.into_iter().map(|(_, a)| a).collect()
        })
    }

    /// Makes the index its owner's only (the directory 0700, its files
    /// 0600), whatever the umask tantivy wrote them under: it holds the
    /// words of people's prompts and secrets.
    pub fn keep_private(&self) -> Result<(), SearchError> {
        use std::os::unix::fs::PermissionsExt;
        let io = |source| SearchError::Io {
            path: self.dir.clone(),
            source,
        };
        let set = |p: &Path, mode: u32| match std::fs::set_permissions(
            p,
            std::fs::Permissions::from_mode(mode),
        ) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        };
        set(&self.dir, 0o700)?;
        for e in std::fs::read_dir(&self.dir).map_err(io)?.flatten() {
            let is_file = e.file_type().is_ok_and(|t| t.is_file());
            set(&e.path(), if is_file { 0o600 } else { 0o700 })?;
        }
        Ok(())
    }

    /// Checks every file of the index against its checksum; the files that
    /// fail.
    pub fn damaged_files(&self) -> Result<Vec<String>, SearchError> {
        let bad = guarded(&self.dir, || {
            self.index
                .validate_checksum()
                .map_err(SearchError::index(&self.dir))
        })?;
        let mut names: Vec<String> = bad.iter().map(|p| p.display().to_string()).collect();
        names.sort();
        Ok(names)
    }

    /// The bytes the index's files take on disk.
    pub fn disk_bytes(&self) -> u64 {
        bytes_under(&self.dir)
    }

    /// Every document `query` matches, in index order.
    pub(crate) fn all_matching(
        &self,
        query: &dyn Query,
    ) -> Result<Vec<TantivyDocument>, SearchError> {
        self.search_and_read(query, &DocSetCollector, |found| {
            let mut addresses: Vec<_> = found.into_iter().collect();
            addresses.sort();
            addresses
        })
    }

    /// Runs `query` with `collector` over the last commit seen and reads
    /// the documents `addresses` picks from what it found; tantivy's panic
    /// on a damaged file is an error.
    pub(crate) fn search_and_read<C: tantivy::collector::Collector>(
        &self,
        query: &dyn Query,
        collector: &C,
        addresses: impl FnOnce(C::Fruit) -> Vec<tantivy::DocAddress>,
    ) -> Result<Vec<TantivyDocument>, SearchError> {
        guarded(&self.dir, || {
            let searcher = self.searcher();
            let found = searcher
                .search(query, collector)
                .map_err(SearchError::index(&self.dir))?;
            addresses(found)
                .into_iter()
                .map(|a| {
                    searcher
                        .doc::<TantivyDocument>(a)
                        .map_err(SearchError::index(&self.dir))
                })
                .collect()
        })
    }
}
