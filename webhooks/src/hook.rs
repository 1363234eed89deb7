//! The two webhooks of a kind, and what a kind's validation looks up first: shared by the route
//! table, which registers them, and the review, which answers them.

/// What a kind's validation needs looked up in the API server before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValidationLookup {
    /// Nothing.
    Nothing,
    /// For a Flexible machine pool, the MachinePool whose infrastructure reference names it
    /// ([`crate::lookup::pool_owner`]): its Kubernetes version must be 1.26 or later.
    PoolOwner,
}

/// Which of a kind's two webhooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hook {
    /// Defaulting: answers with a JSON patch.
    Mutate,
    /// Validation: admits or denies.
    Validate,
}

impl Hook {
    /// The first word of the path, also the `webhook` label of the metrics.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mutate => "mutate",
            Self::Validate => "validate",
        }
    }
}
