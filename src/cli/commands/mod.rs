//! One file per subcommand, named for its verb (`hook-env` is `hook_env.rs`; a verb that is
//! a Rust keyword takes a trailing underscore: `self_.rs`, `use_.rs`), each with its clap
//! `Args` and `run()`. A command imports from `crate::cli::support`, never another command.

pub mod audit;
pub mod cache;
pub mod check;
pub mod completions;
pub mod default;
pub mod discover;
pub mod doctor;
pub mod env;
pub mod hook;
pub mod hook_env;
pub mod install;
pub mod link;
pub mod list;
pub mod lock;
pub mod module;
pub mod outdated;
pub mod pin;
pub mod prefix;
pub mod reshim;
pub mod run;
pub mod self_;
pub mod show;
pub mod torch;
pub mod trust;
pub mod uninstall;
pub mod unlink;
pub mod update;
pub mod use_;
pub mod which;
