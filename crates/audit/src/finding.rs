//! A finding of the audit: typed, rendered to text or JSON by `report`.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    /// Nothing to compare with here.
    Skip,
    Warn,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Skip => "skip",
            Status::Warn => "warn",
            Status::Error => "error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// `kernel-image`, `ptx`, `code-object`, `runtime`, `gpus`, `device-code`.
    pub id: &'static str,
    pub status: Status,
    pub message: String,
    pub hint: Option<String>,
}

impl Finding {
    pub(crate) fn new(id: &'static str, status: Status, message: String) -> Finding {
        Finding {
            id,
            status,
            message,
            hint: None,
        }
    }

    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Finding {
        self.hint = Some(hint.into());
        self
    }
}
