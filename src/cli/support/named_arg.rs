//! clap parsers for the domain's closed sets of values (`Named`), so clap stays in the CLI.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use gpuenv_core::named::Named;

/// `#[arg(value_parser = named::<Shell>())]`: the values, their help, and the typed result.
pub fn named<T: Named>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(
        T::ALL
            .iter()
            .map(|v| PossibleValue::new(v.name()).help(v.help())),
    )
    .map(|name| T::from_name(&name).expect("clap accepted only listed names"))
}
