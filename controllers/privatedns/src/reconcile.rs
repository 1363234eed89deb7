//! One reconcile of an AzureCluster: the kit's skip rules and finalizer, then the cluster's
//! private DNS brought to the spec or, once the object is deleted, cleaned up.

use std::sync::Arc;

use capz_kit::api::AzureCluster;
use capz_kit::azure_cluster;
use capz_kit::error::Error;
use capz_kit::kube::runtime::controller::Action;

use crate::apply::apply;
use crate::cleanup::cleanup;
use crate::context::{ID, State};

pub(crate) async fn reconcile(object: Arc<AzureCluster>, state: Arc<State>) -> Result<Action, Error> {
    azure_cluster::reconcile(&*state, &state.client, ID.finalizer(), object, apply, cleanup).await
}
