//! AzureManagedCluster and AzureManagedClusterTemplate: CAPZ neither defaults nor checks them.
//!
//! An AzureManagedCluster only mirrors its control plane's endpoint, which the controller copies
//! in, and a template of one has no fields; CAPZ's webhooks for both admit everything (it does not
//! even keep the endpoint once set), and so do these rules. They are served all the same, as
//! CAPZ serves them, so that a manifest naming the webhooks finds them.

use capz_api::{AzureManagedCluster, AzureManagedClusterTemplate};

use crate::field::{FieldError, Verdict};
use crate::{Context, Rules};

impl Rules for AzureManagedCluster {
    fn default(&mut self, _ctx: &Context<'_>) -> Result<(), FieldError> {
        Ok(())
    }

    fn validate_create(&self, _ctx: &Context<'_>) -> Verdict {
        Verdict::default()
    }

    fn validate_update(&self, _old: &Self, _ctx: &Context<'_>) -> Verdict {
        Verdict::default()
    }
}

impl Rules for AzureManagedClusterTemplate {
    fn default(&mut self, _ctx: &Context<'_>) -> Result<(), FieldError> {
        Ok(())
    }

    fn validate_create(&self, _ctx: &Context<'_>) -> Verdict {
        Verdict::default()
    }

    fn validate_update(&self, _old: &Self, _ctx: &Context<'_>) -> Verdict {
        Verdict::default()
    }
}
