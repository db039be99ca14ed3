//! Closed sets of values a user picks by name (shells, output formats, install profiles):
//! the domain type lists its values and names them; the CLI builds its parser from that.

pub trait Named: Copy + Send + Sync + 'static {
    /// Every value, in the order `--help` lists them.
    const ALL: &'static [Self];
    /// The name a user types.
    fn name(self) -> &'static str;
    /// One line for `--help`.
    fn help(self) -> &'static str {
        ""
    }
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }
}
