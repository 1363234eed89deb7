//! Everything the emulator remembers: resources, operations in flight and the request log.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

/// A stored resource: the body ARM answers with, and whether it was seeded rather than created
/// through the API.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) body: Value,
    pub(crate) seeded: bool,
}

/// What a long-running operation does when it completes.
#[derive(Debug, Clone)]
pub(crate) enum Completion {
    /// Remove a resource group and everything whose id lies under it.
    DeleteResourceGroup { key: String },
}

/// A long-running operation in flight.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub(crate) completion: Completion,
    pub(crate) done_at: Instant,
    pub(crate) finished: bool,
}

/// One answered request, for the request log.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedRequest {
    /// HTTP method.
    pub method: String,
    /// Request path, without the query.
    pub path: String,
    /// The resource type the request addressed (`-` when it addressed nothing known).
    pub resource_type: String,
    /// HTTP status of the answer.
    pub status: u16,
    /// Who made the call; absent when it was refused for want of a valid token.
    pub caller: Option<crate::Caller>,
}

/// How many requests the log keeps; older ones only remain in the counters.
const LOG_CAPACITY: usize = 1000;

/// The emulator's whole mutable state.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Resources by lower-cased id: ARM names are case-insensitive.
    pub(crate) resources: BTreeMap<String, Stored>,
    pub(crate) operations: HashMap<String, Operation>,
    pub(crate) log: VecDeque<LoggedRequest>,
    /// Request counts by (method, resource type, status).
    pub(crate) counters: BTreeMap<(String, String, u16), u64>,
}

impl State {
    /// Completes every operation whose time has come.
    pub(crate) fn advance(&mut self, now: Instant) {
        let due: Vec<Completion> = self
            .operations
            .values_mut()
            .filter(|operation| !operation.finished && operation.done_at <= now)
            .map(|operation| {
                operation.finished = true;
                operation.completion.clone()
            })
            .collect();
        for completion in due {
            match completion {
                Completion::DeleteResourceGroup { key } => {
                    let prefix = format!("{key}/");
                    self.resources
                        .retain(|id, _| id != &key && !id.starts_with(&prefix));
                }
            }
        }
    }

    pub(crate) fn record(&mut self, entry: LoggedRequest) {
        *self
            .counters
            .entry((entry.method.clone(), entry.resource_type.clone(), entry.status))
            .or_default() += 1;
        if self.log.len() == LOG_CAPACITY {
            self.log.pop_front();
        }
        self.log.push_back(entry);
    }
}
