//! The files a kernel's helpers come from. Unit 0 is the kernel's own file; a `from X import
//! name` that is not Triton's is followed to X's file, as Python finds a package's module:
//! `from .utils import f` beside the importing file (`..` one folder up), `from pkg.mod
//! import f` in the importing file's folder or the nearest parent that has `pkg/mod.py` (or
//! `pkg/mod/__init__.py`), then in the version's `python_path` folders and `$PYTHONPATH`'s, as
//! Python looks along `sys.path`. Each unit's names are then one table, built in source order (a
//! later binding replaces an earlier one, as Python's): values (the file's `@triton.jit`
//! functions, Triton's names), module-level globals, and names kwb cannot follow, whose use is
//! an error at their import.

use super::names;
use super::value::Val;
use crate::tile::ast::Module;
use crate::tile::parse::{self, FileKind, ParseError};
use crate::tile::span::{LineIndex, Span};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// At most this many files take part in one compile.
const MAX_UNITS: usize = 32;

/// One parsed file.
pub(super) struct Unit {
    pub path: PathBuf,
    pub source: String,
    pub lines: LineIndex,
    pub module: Module,
    /// Its syntax errors (for unit 0, reported with the kernel's; for the others, reported
    /// when one of their functions with errors is called).
    pub parse_errors: Vec<ParseError>,
    /// For each import of `module.imports`: the unit it names, or why there is none (`None`
    /// for Triton's own modules, and for `import x` of a file kwb did not find).
    imports: Vec<Option<Result<usize, String>>>,
    /// For each import and each name it imports: the unit of the submodule of that name
    /// (`from . import utils` names `utils.py`), when there is one.
    submodules: Vec<Vec<Option<usize>>>,
}

/// What a name of a unit is bound to.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Binding {
    Value(Val),
    /// A module-level assignment: its unit and its index in that unit's `module.globals`.
    Global(usize, usize),
    /// Imported from where kwb cannot follow: the import's span and why.
    Foreign(Span, String),
}

/// Parses the kernel's file and every file its imports reach (up to [`MAX_UNITS`]).
pub(super) fn load(path: &Path, source: &str, python_path: &[PathBuf]) -> Vec<Unit> {
    let search = search_path(python_path);
    let mut units = vec![unit(path.to_path_buf(), source.to_string())];
    let mut next = 0;
    while next < units.len() {
        let mut imports = Vec::new();
        let mut submodules = Vec::new();
        let from = units[next].path.clone();
        for imp in units[next].module.imports.clone() {
            let triton = imp.level == 0 && imp.module.first().is_some_and(|m| m == "triton");
            if triton || (!imp.from && imp.alias.is_none()) {
                imports.push(None);
                submodules.push(Vec::new());
                continue;
            }
            let found = find_module(&from, imp.level, &imp.module, &search);
            if !imp.from {
                // `import pkg.mod as m`: a module object, when kwb finds its file.
                imports.push(found.ok().map(|f| add(&mut units, f)));
                submodules.push(Vec::new());
                continue;
            }
            imports.push(Some(found.and_then(|f| add(&mut units, f))));
            let subs = (imp.names.iter())
                .map(|(name, _)| {
                    let mut parts = imp.module.clone();
                    parts.push(name.clone());
                    let file = find_module(&from, imp.level, &parts, &search).ok()?;
                    add(&mut units, file).ok()
                })
                .collect();
            submodules.push(subs);
        }
        units[next].imports = imports;
        units[next].submodules = submodules;
        next += 1;
    }
    units
}

/// The unit of `file`, read and parsed the first time.
fn add(units: &mut Vec<Unit>, file: PathBuf) -> Result<usize, String> {
    if let Some(i) = units.iter().position(|u| same_file(&u.path, &file)) {
        return Ok(i);
    }
    if units.len() >= MAX_UNITS {
        return Err(format!(
            "more than {MAX_UNITS} files are imported; kwb stops following imports there"
        ));
    }
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    units.push(unit(file, text));
    Ok(units.len() - 1)
}

fn unit(path: PathBuf, source: String) -> Unit {
    let (module, parse_errors) = parse::parse(&source, FileKind::of(&path));
    Unit {
        lines: LineIndex::new(&source),
        path,
        source,
        module,
        parse_errors,
        imports: Vec::new(),
        submodules: Vec::new(),
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Where absolute imports are looked for after the importing file's folders: the version's
/// `python_path`, then `$PYTHONPATH`'s folders.
fn search_path(python_path: &[PathBuf]) -> Vec<PathBuf> {
    let env = std::env::var_os("PYTHONPATH").unwrap_or_default();
    let from_env = std::env::split_paths(&env).filter(|p| !p.as_os_str().is_empty());
    python_path.iter().cloned().chain(from_env).collect()
}

/// The file of module `parts` imported with `level` leading dots from the file `from`.
fn find_module(
    from: &Path,
    level: u32,
    parts: &[String],
    search: &[PathBuf],
) -> Result<PathBuf, String> {
    let dotted = format!("{}{}", ".".repeat(level as usize), parts.join("."));
    let dir = from.parent().unwrap_or(Path::new("."));
    let candidates = |base: &Path| -> Vec<PathBuf> {
        let mut p = base.to_path_buf();
        parts.iter().for_each(|s| p.push(s));
        if parts.is_empty() {
            vec![p.join("__init__.py")]
        } else {
            vec![p.with_extension("py"), p.join("__init__.py")]
        }
    };
    let bases: Vec<&Path> = if level > 0 {
        let mut base = Some(dir);
        for _ in 1..level {
            base = base.and_then(Path::parent);
        }
        base.into_iter().collect()
    } else {
        dir.ancestors()
            .take(16)
            .chain(search.iter().map(PathBuf::as_path))
            .collect()
    };
    bases
        .into_iter()
        .flat_map(candidates)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            let place = if level > 0 {
                String::new()
            } else if search.is_empty() {
                " and in its parent folders".to_string()
            } else {
                let dirs: Vec<String> = search.iter().map(|p| p.display().to_string()).collect();
                format!(", in its parent folders and in {}", dirs.join(", "))
            };
            format!(
                "kwb cannot find the module `{dotted}` (looked beside {}{place})",
                from.display()
            )
        })
}

/// Names the kernel's module had at run time that its text does not give (`PythonEnv::globals`):
/// each replaces the table's binding. A dotted path kwb does not implement is an error where
/// the name is used.
pub(super) fn inject(table: &mut HashMap<String, Binding>, globals: &[(String, String)]) {
    for (name, dotted) in globals {
        let path: Vec<String> = dotted.split('.').map(str::to_string).collect();
        let b = match names::resolve_path(&path) {
            Val::Module(p) if p == *dotted && path.len() > 1 => Binding::Foreign(
                Span::new(0, 0),
                format!(
                    "`{name}` was `{dotted}` when the program ran (its `python_globals`), which is \
                     not a Triton name kwb implements"
                ),
            ),
            v => Binding::Value(v),
        };
        table.insert(name.clone(), b);
    }
}

/// Every unit's name table.
pub(super) fn tables(units: &[Unit]) -> Vec<HashMap<String, Binding>> {
    let mut memo: Vec<Option<HashMap<String, Binding>>> = vec![None; units.len()];
    for u in 0..units.len() {
        table(units, u, &mut memo, &mut Vec::new());
    }
    memo.into_iter().map(Option::unwrap_or_default).collect()
}

fn table(
    units: &[Unit],
    u: usize,
    memo: &mut Vec<Option<HashMap<String, Binding>>>,
    visiting: &mut Vec<usize>,
) -> HashMap<String, Binding> {
    if let Some(t) = &memo[u] {
        return t.clone();
    }
    visiting.push(u);
    let unit = &units[u];
    let m = &unit.module;
    let mut t: HashMap<String, Binding> = HashMap::new();
    t.insert("tl".into(), Binding::Value(Val::Module("tl".into())));
    t.insert(
        "triton".into(),
        Binding::Value(Val::Module("triton".into())),
    );
    // Every binding with its position, bound in source order.
    let mut events: Vec<(u32, usize, u8)> = Vec::new();
    events.extend(
        m.imports
            .iter()
            .enumerate()
            .map(|(i, x)| (x.span.start, i, 0)),
    );
    events.extend(
        m.funcs
            .iter()
            .enumerate()
            .map(|(i, f)| (f.def_span.start, i, 1)),
    );
    events.extend(
        m.globals
            .iter()
            .enumerate()
            .map(|(i, g)| (g.span.start, i, 2)),
    );
    events.sort_unstable();
    for (_, i, kind) in events {
        match kind {
            0 => {
                let imp = &m.imports[i];
                if !imp.from {
                    if let (Some(a), Some(Some(Ok(w)))) = (&imp.alias, unit.imports.get(i)) {
                        t.insert(a.clone(), Binding::Value(Val::Unit(*w)));
                        continue;
                    }
                    let (name, v) = match &imp.alias {
                        Some(a) => (a.clone(), names::resolve_path(&imp.module)),
                        None => match imp.module.first() {
                            Some(r) => (r.clone(), names::resolve_path(&imp.module[..1])),
                            None => continue,
                        },
                    };
                    t.insert(name, Binding::Value(v));
                    continue;
                }
                let from = format!("{}{}", ".".repeat(imp.level as usize), imp.module.join("."));
                for (k, (name, alias)) in imp.names.iter().enumerate() {
                    let bound = alias.clone().unwrap_or_else(|| name.clone());
                    let sub = unit
                        .submodules
                        .get(i)
                        .and_then(|s| s.get(k))
                        .copied()
                        .flatten();
                    let defined = match unit.imports.get(i) {
                        Some(Some(Ok(v))) if !visiting.contains(v) => {
                            table(units, *v, memo, visiting).contains_key(name)
                        }
                        _ => false,
                    };
                    if let (Some(w), false) = (sub, defined) {
                        // `from . import utils`: the module `utils.py` itself.
                        t.insert(bound, Binding::Value(Val::Unit(w)));
                        continue;
                    }
                    let b = match unit.imports.get(i).cloned().flatten() {
                        None => {
                            let mut path = imp.module.clone();
                            path.push(name.clone());
                            match names::resolve_path(&path) {
                                Val::Module(p) if p.starts_with("triton") => Binding::Foreign(
                                    imp.span,
                                    format!("kwb does not know `{p}` (not a Triton name kwb implements)"),
                                ),
                                v => Binding::Value(v),
                            }
                        }
                        Some(Err(why)) => Binding::Foreign(imp.span, format!("`{name}` is imported from `{from}`, but {why}")),
                        Some(Ok(v)) if visiting.contains(&v) => Binding::Foreign(
                            imp.span,
                            format!("`{name}` is imported from `{from}`, which imports this file back; kwb does not follow circular imports"),
                        ),
                        Some(Ok(v)) => {
                            let shown = units[v].path.display().to_string();
                            match table(units, v, memo, visiting).remove(name) {
                                Some(Binding::Foreign(_, why)) => Binding::Foreign(
                                    imp.span,
                                    format!("`{name}` comes from {shown}, where: {why}"),
                                ),
                                Some(b) => b,
                                None => Binding::Foreign(
                                    imp.span,
                                    format!("`{name}` is imported from `{from}` ({shown}), which has no top-level `{name}` kwb can read"),
                                ),
                            }
                        }
                    };
                    // An import inside a top-level `if`/`try`: Python binds the name from one
                    // branch only, so the branches (and any earlier binding) must agree.
                    let b = match t.get(&bound) {
                        Some(old) if imp.conditional && *old != b => Binding::Foreign(
                            imp.span,
                            format!("`{bound}` is bound differently in the branches of a top-level `if`/`try`, and kwb cannot tell which one Python runs"),
                        ),
                        _ => b,
                    };
                    t.insert(bound, b);
                }
            }
            1 => {
                t.insert(m.funcs[i].name.name.clone(), Binding::Value(Val::Jit(u, i)));
            }
            _ => {
                t.insert(m.globals[i].name.name.clone(), Binding::Global(u, i));
            }
        }
    }
    visiting.pop();
    memo[u] = Some(t.clone());
    t
}
