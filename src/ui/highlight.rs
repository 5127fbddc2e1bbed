//! Syntax highlighting for the source, PTX and SASS panes. syntect parses with its bundled
//! grammars plus kwb's own PTX grammar (`assets/ptx.sublime-syntax`, compiled in), and this
//! module turns the result into owned ratatui lines. Foreground colours and font styles come
//! from a syntect code theme; backgrounds never do, because the TUI theme owns the background.
//! Highlighting runs once per compile, not per frame, so callers keep the lines it returns.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use std::path::Path;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme as CodeTheme, ThemeSet};
use syntect::parsing::{SyntaxDefinition, SyntaxReference, SyntaxSet, SyntaxSetBuilder};
use syntect::util::LinesWithEndings;

/// Our PTX grammar, compiled into the binary.
const PTX_GRAMMAR: &str = include_str!("../../assets/ptx.sublime-syntax");
/// The code theme used when the requested one is unknown.
pub const DEFAULT_CODE_THEME: &str = "base16-ocean.dark";
/// Tab stops are every this many columns.
const TAB_WIDTH: usize = 4;

/// The languages kwb shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// CUDA C++, highlighted with syntect's C++ grammar (it ships none for CUDA).
    Cuda,
    Ptx,
    /// SASS, highlighted lightly with the PTX grammar (comments, guards, registers, numbers).
    Sass,
    /// Tile-language sources (`.tile`, `.py`): Python's syntax, so Python's grammar.
    Python,
    Plain,
}

impl Lang {
    /// The language for a file, by extension; anything unknown is plain text.
    pub fn for_path(p: &Path) -> Lang {
        let ext = p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some(
                "cu" | "cuh" | "h" | "hh" | "hpp" | "hxx" | "c" | "cc" | "cpp" | "cxx" | "inl",
            ) => Lang::Cuda,
            Some("ptx") => Lang::Ptx,
            Some("sass") => Lang::Sass,
            Some("tile" | "py") => Lang::Python,
            _ => Lang::Plain,
        }
    }
}

/// Grammars and code themes, loaded once and shared by every highlight call.
pub struct Highlighter {
    /// syntect's bundled grammars (C++ among them).
    defaults: SyntaxSet,
    /// Our PTX grammar on its own; `None` if it failed to load (PTX is then plain).
    ptx: Option<SyntaxSet>,
    themes: ThemeSet,
    warnings: Vec<String>,
}

impl Default for Highlighter {
    fn default() -> Self {
        Highlighter::new()
    }
}

impl Highlighter {
    /// Loads everything. Never panics: a broken PTX grammar only turns PTX highlighting off
    /// and leaves a line in `warnings()`.
    pub fn new() -> Highlighter {
        Highlighter::with_ptx_grammar(PTX_GRAMMAR)
    }

    fn with_ptx_grammar(grammar: &str) -> Highlighter {
        let (ptx, warnings) = match load_grammar(grammar) {
            Ok(set) => (Some(set), Vec::new()),
            Err(why) => (None, vec![format!("PTX highlighting is off: {why}")]),
        };
        Highlighter {
            defaults: SyntaxSet::load_defaults_newlines(),
            ptx,
            themes: ThemeSet::load_defaults(),
            warnings,
        }
    }

    /// Problems met while loading, for the diagnostics panel.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The code themes syntect knows, sorted by name.
    pub fn code_themes(&self) -> Vec<String> {
        self.themes.themes.keys().cloned().collect()
    }

    /// Highlights `text` into owned lines: tabs expanded to 4-column stops, no line ending
    /// characters. An unknown `code_theme` falls back to base16-ocean.dark; `color == false`
    /// (NO_COLOR) gives unstyled lines.
    pub fn highlight(
        &self,
        text: &str,
        lang: Lang,
        code_theme: &str,
        color: bool,
    ) -> Vec<Line<'static>> {
        let target = self.syntax_for(lang).zip(self.code_theme(code_theme));
        let Some(((set, syntax), theme)) = target.filter(|_| color) else {
            return text.lines().map(plain_line).collect();
        };
        let mut parser = HighlightLines::new(syntax, theme);
        let mut out = Vec::with_capacity(text.len() / 32 + 1);
        let mut rest = LinesWithEndings::from(text);
        for line in rest.by_ref() {
            match parser.highlight_line(line, set) {
                Ok(regions) => out.push(styled_line(&regions)),
                Err(_) => {
                    // syntect gave up on this line; show it and the rest uncoloured.
                    out.push(plain_line(line));
                    break;
                }
            }
        }
        out.extend(rest.map(plain_line));
        out
    }

    fn syntax_for(&self, lang: Lang) -> Option<(&SyntaxSet, &SyntaxReference)> {
        match lang {
            Lang::Cuda => {
                let set = &self.defaults;
                set.find_syntax_by_extension("cpp").map(|s| (set, s))
            }
            Lang::Ptx | Lang::Sass => {
                let set = self.ptx.as_ref()?;
                set.find_syntax_by_name("PTX").map(|s| (set, s))
            }
            Lang::Python => {
                let set = &self.defaults;
                set.find_syntax_by_extension("py").map(|s| (set, s))
            }
            Lang::Plain => None,
        }
    }

    fn code_theme(&self, name: &str) -> Option<&CodeTheme> {
        let themes = &self.themes.themes;
        themes
            .get(name)
            .or_else(|| themes.get(DEFAULT_CODE_THEME))
            .or_else(|| themes.values().next())
    }
}

/// Parses and links a grammar. syntect compiles each regex while loading, so a bad pattern
/// (or a push to a context that does not exist) is an error here, not a panic mid-highlight.
fn load_grammar(text: &str) -> Result<SyntaxSet, String> {
    let def = SyntaxDefinition::load_from_str(text, true, Some("PTX"))
        .map_err(|e| format!("assets/ptx.sublime-syntax: {e}"))?;
    let mut builder = SyntaxSetBuilder::new();
    builder.add(def);
    let set = builder.build();
    match set.find_unlinked_contexts().into_iter().next() {
        Some(missing) => Err(format!("reference to a missing context: {missing}")),
        None => Ok(set),
    }
}

/// A syntect style as a ratatui one: foreground and font style only.
fn convert(style: syntect::highlighting::Style) -> Style {
    let fg = style.foreground;
    let mut out = Style::new().fg(Color::Rgb(fg.r, fg.g, fg.b));
    for (font, modifier) in [
        (FontStyle::BOLD, Modifier::BOLD),
        (FontStyle::ITALIC, Modifier::ITALIC),
        (FontStyle::UNDERLINE, Modifier::UNDERLINED),
    ] {
        if style.font_style.contains(font) {
            out = out.add_modifier(modifier);
        }
    }
    out
}

fn styled_line(regions: &[(syntect::highlighting::Style, &str)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::with_capacity(regions.len());
    let mut column = 0;
    let mut pending = String::new();
    let mut pending_style = Style::new();
    for &(style, piece) in regions {
        let style = convert(style);
        if style != pending_style && !pending.is_empty() {
            spans.push(Span::styled(std::mem::take(&mut pending), pending_style));
        }
        pending_style = style;
        expand_into(&mut pending, piece, &mut column);
    }
    if !pending.is_empty() {
        spans.push(Span::styled(pending, pending_style));
    }
    Line::from(spans)
}

fn plain_line(line: &str) -> Line<'static> {
    let mut text = String::with_capacity(line.len());
    expand_into(&mut text, line, &mut 0);
    Line::raw(text)
}

/// Appends `piece` to `out`, dropping line endings and expanding tabs to the next stop.
fn expand_into(out: &mut String, piece: &str, column: &mut usize) {
    for ch in piece.chars() {
        match ch {
            '\n' | '\r' => {}
            '\t' => {
                let n = TAB_WIDTH - *column % TAB_WIDTH;
                out.extend(std::iter::repeat_n(' ', n));
                *column += n;
            }
            _ => {
                out.push(ch);
                *column += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syntect::parsing::{ParseState, ScopeStack, ScopeStackOp};

    /// Real NVRTC output: `kwb inspect kernels/elementwise-add/v2_f32x4.cu --ptx`, trimmed.
    const PTX: &str = "//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 9.0\n.target sm_90\n\
        .address_size 64\n\n\t// .globl\tadd_f32x4\n\n.visible .entry add_f32x4(\n\
        \t.param .u64 add_f32x4_param_0,\n\t.param .u32 add_f32x4_param_3\n)\n{\n\
        \t.reg .pred \t%p<7>;\n\t.reg .f32 \t%f<36>;\n\t.loc\t1 7 0\n\
        \tld.param.u64 \t%rd33, [add_f32x4_param_0];\n\tmov.u32 \t%r1, %ctaid.x;\n\
        \tshl.b64 \t%rd4, %rd38, 2;\n\t@%p1 bra \t$L__BB0_8;\n\tbra.uni \t$L__BB0_1;\n\n\
        $L__BB0_8:\n\tld.global.v4.f32 \t{%f16, %f17, %f18, %f19}, [%rd46];\n\
        \tst.global.f32 \t[%rd57+-4], %f9;\n\tmov.f32 \t%f1, 0f3F800000;\n\
        \t.pragma \"nounroll\";\n\tret;\n\n}\n\n\t.file\t1 \"kernels/elementwise-add/v2_f32x4.cu\"\n";

    /// A token of `PTX` and a scope that some occurrence of it must carry.
    const EXPECT: &str = "\
        .version keyword.control.directive|.entry storage.type.function|\
        add_f32x4 entity.name.function|.reg storage.modifier.state-space|.u64 storage.type|\
        add_f32x4_param_0 variable.parameter|ld support.function.instruction|\
        .global.v4.f32 support.function.instruction.modifier|bra keyword.control.flow|\
        %rd33 variable.other.register|%ctaid.x variable.other.register.special|\
        0f3F800000 constant.numeric.float.hexadecimal|9.0 constant.numeric.float.decimal|\
        64 constant.numeric.integer.decimal|$L__BB0_8 entity.name.label|\
        $L__BB0_1 variable.other.label|+ meta.brackets.address|%rd57 meta.brackets.address|\
        nounroll string.quoted.double|sm_90 constant.other|// comment.line.double-slash";

    /// Each token of `text` (split where scopes change) with its whole scope stack.
    fn scopes(text: &str) -> Vec<(String, String)> {
        let h = Highlighter::new();
        let (set, syntax) = h.syntax_for(Lang::Ptx).expect("PTX grammar");
        let (mut state, mut stack) = (ParseState::new(syntax), ScopeStack::new());
        let mut out = Vec::new();
        for line in LinesWithEndings::from(text) {
            let mut at = 0;
            let ops = state.parse_line(line, set).unwrap();
            for (pos, op) in ops.into_iter().chain([(line.len(), ScopeStackOp::Noop)]) {
                if pos > at {
                    out.push((line[at..pos].to_string(), format!("{stack:?}")));
                    at = pos;
                }
                stack.apply(&op).unwrap();
            }
        }
        out
    }

    #[test]
    fn ptx_grammar_loads_and_scopes_real_ptx() {
        assert_eq!(Highlighter::new().warnings(), [] as [String; 0]);
        let all = scopes(PTX);
        for pair in EXPECT.split('|') {
            let (token, scope) = pair.split_once(' ').unwrap();
            let scope = format!("<{scope}.ptx>");
            let seen: Vec<_> = all.iter().filter(|(t, _)| t == token).collect();
            let found = seen.iter().any(|(_, s)| s.contains(&scope));
            assert!(found, "{token}: {seen:?}");
        }
    }

    /// The fg colour of the first span whose text is exactly `token`.
    fn fg_of(lines: &[Line<'static>], token: &str) -> Option<Color> {
        let mut spans = lines.iter().flat_map(|l| l.spans.iter());
        let span = spans.find(|s| s.content.trim() == token);
        span.unwrap_or_else(|| panic!("no span `{token}`")).style.fg
    }

    fn unstyled(lines: &[Line<'static>]) -> bool {
        let spans = lines.iter().flat_map(|l| &l.spans);
        lines.iter().all(|l| l.style == Style::default())
            && spans.map(|s| s.style).all(|s| s == Style::default())
    }

    /// `text` as PTX in the default code theme, in colour.
    fn ptx(h: &Highlighter, text: &str) -> Vec<Line<'static>> {
        h.highlight(text, Lang::Ptx, DEFAULT_CODE_THEME, true)
    }

    #[test]
    fn ptx_kinds_get_distinct_colours() {
        let lines = ptx(&Highlighter::new(), PTX);
        let comment = "// Generated by NVIDIA NVVM Compiler";
        let kinds = [".version", "mov.u32", "%r1", "0f3F800000", comment];
        let colours: Vec<_> = kinds.iter().map(|k| fg_of(&lines, k)).collect();
        for (i, a) in colours.iter().enumerate() {
            assert!(matches!(a, Some(Color::Rgb(..))), "{} has {a:?}", kinds[i]);
            for (j, b) in colours.iter().enumerate().skip(i + 1) {
                assert_ne!(a, b, "{} and {} share a colour", kinds[i], kinds[j]);
            }
        }
        let mut spans = lines.iter().flat_map(|l| &l.spans);
        assert!(spans.all(|s| s.style.bg.is_none()));
    }

    #[test]
    fn cuda_maps_to_cpp() {
        let lang = |p: &str| Lang::for_path(Path::new(p));
        assert_eq!(
            [lang("v1.cu"), lang("a.CUH"), lang("b.hpp")],
            [Lang::Cuda; 3]
        );
        assert_eq!([lang("o.ptx"), lang("o.sass")], [Lang::Ptx, Lang::Sass]);
        assert_eq!(lang("notes.txt"), Lang::Plain);
        let h = Highlighter::new();
        assert_eq!(h.syntax_for(Lang::Cuda).unwrap().1.name, "C++");
        let src = "__global__ void k(float *x) {\n\treturn; // done\n}\n";
        let lines = h.highlight(src, Lang::Cuda, "base16-ocean.dark", true);
        assert_eq!(lines.len(), 3);
        assert_ne!(fg_of(&lines, "void"), fg_of(&lines, "k"));
        assert_ne!(fg_of(&lines, "return"), fg_of(&lines, "// done"));
        assert_eq!(lines[1].to_string(), "    return; // done");
    }

    #[test]
    fn no_color_gives_plain_lines() {
        let h = Highlighter::new();
        let lines = h.highlight("a\tb\r\nabcde\tf\n", Lang::Ptx, "x", false);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, ["a   b", "abcde   f"]);
        assert!(unstyled(&lines));
        assert!(unstyled(&h.highlight(PTX, Lang::Cuda, "x", false)));
        assert_eq!(h.highlight("x\ny", Lang::Plain, "x", true).len(), 2);
    }

    #[test]
    fn unknown_code_theme_falls_back() {
        let h = Highlighter::new();
        assert!(h.code_themes().iter().any(|t| t == DEFAULT_CODE_THEME));
        assert!(h.code_themes().iter().any(|t| t == "Solarized (light)"));
        let fallback = h.highlight(PTX, Lang::Ptx, "no-such-theme", true);
        assert_eq!(fallback, ptx(&h, PTX));
        assert_ne!(
            fallback,
            h.highlight(PTX, Lang::Ptx, "InspiredGitHub", true)
        );
    }

    #[test]
    fn broken_grammar_turns_ptx_plain_with_a_warning() {
        let bad_regex = PTX_GRAMMAR.replace("'\\['", "'[unclosed'");
        let h = Highlighter::with_ptx_grammar(&bad_regex);
        assert!(
            h.warnings()[0].contains("regex '[unclosed'"),
            "{:?}",
            h.warnings()
        );
        assert!(unstyled(&ptx(&h, PTX)));
        let dangling = PTX_GRAMMAR.replace("push: address", "push: x");
        let h = Highlighter::with_ptx_grammar(&dangling);
        assert!(
            h.warnings()[0].contains("missing context"),
            "{:?}",
            h.warnings()
        );
        assert!(unstyled(&ptx(&h, PTX)));
        let h = Highlighter::with_ptx_grammar("not: [a grammar");
        assert_eq!(h.warnings().len(), 1);
    }

    /// `cargo test --release --lib highlight -- --ignored --nocapture` prints the timing.
    #[test]
    #[ignore]
    fn timing_5000_lines_of_ptx() {
        let body: Vec<&str> = PTX.lines().skip(18).take(12).collect();
        let body = format!("{}\n", body.join("\n")).repeat(5000 / 12);
        let (h, text) = (Highlighter::new(), format!("{PTX}{body}"));
        for round in 0..3 {
            let start = std::time::Instant::now();
            let n = ptx(&h, &text).len();
            println!("round {round}: {n} lines in {:?}", start.elapsed());
        }
    }
}
