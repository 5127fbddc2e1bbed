//! Naming a sweep's configurations on the command line. (How a batch marks and skips a sweep's
//! configurations is planned with every other run, in `engine::plan`.)

/// Splits comma-separated version names, leaving the commas inside a configuration's
/// brackets alone: `v1,v8[num_warps=4,BLOCK=1024]` is two names.
pub fn split_names(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for arg in args {
        let mut depth = 0i32;
        let mut cur = String::new();
        for ch in arg.chars() {
            match ch {
                '[' => depth += 1,
                ']' => depth -= 1,
                ',' if depth <= 0 => {
                    out.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
            cur.push(ch);
        }
        out.push(cur);
    }
    out.retain(|s| !s.trim().is_empty());
    out.iter_mut().for_each(|s| *s = s.trim().to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::split_names;

    #[test]
    fn commas_inside_brackets_stay() {
        let got = split_names(&["v1,v8[num_warps=4,BLOCK=1024]".into(), "v9".into()]);
        assert_eq!(got, ["v1", "v8[num_warps=4,BLOCK=1024]", "v9"]);
    }
}
