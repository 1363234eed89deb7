//! Virtual network peerings: one per direction, kept inside the local network's document. A
//! peering is `Initiated` until the remote network peers back, then both sides are `Connected`;
//! when either side or the remote network goes away, what is left shows `Disconnected`.

use std::net::IpAddr;

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{embedded, resource_guid};
use crate::error::ArmError;
use crate::ip::Cidr;
use crate::resources::embedded as children;
use crate::resources::{Hooks, NO_HOOKS, Prepare, ResourceType, fields};
use crate::state::State;

pub(crate) static PEERING: ResourceType = ResourceType {
    // The remote network may be deleted under a peering: the peering then shows `Disconnected`.
    weak_references: true,
    hooks: Hooks {
        render: Some(show_state),
        ..NO_HOOKS
    },
    ..embedded(
        "Microsoft.Network/virtualNetworks/virtualNetworkPeerings",
        "virtualNetworkPeerings",
        "InUseResourceCannotBeDeleted",
        &[],
        prepare_peering,
    )
};

const CONNECTED: &str = "Connected";
const INITIATED: &str = "Initiated";
const DISCONNECTED: &str = "Disconnected";

/// The network a peering (or its id) belongs to: the id up to `/virtualNetworkPeerings/`.
fn local_network(peering_id: &str) -> &str {
    let lower = peering_id.to_ascii_lowercase();
    lower
        .rfind("/virtualnetworkpeerings/")
        .map_or(peering_id, |at| &peering_id[..at])
}

fn remote_of(peering: &Value) -> Option<&str> {
    peering
        .pointer("/properties/remoteVirtualNetwork/id")
        .and_then(Value::as_str)
}

/// The peering of `network` (a stored network document) that points back at `local` (an id).
fn peering_back<'a>(network: &'a Value, local: &str) -> Option<&'a Value> {
    children::all(network, "virtualNetworkPeerings")
        .iter()
        .find(|peering| remote_of(peering).is_some_and(|remote| remote.eq_ignore_ascii_case(local)))
}

/// Writes a peering state and the sync level that goes with it.
fn write_state(properties: &mut serde_json::Map<String, Value>, state: &str) {
    let sync = if state == CONNECTED {
        "FullyInSync"
    } else {
        "RemoteNotInSync"
    };
    properties.insert("peeringState".into(), json!(state));
    properties.insert("peeringSyncLevel".into(), json!(sync));
}

fn set_state(peering: &mut Value, state: &str) {
    if let Some(properties) = peering.get_mut("properties").and_then(Value::as_object_mut) {
        write_state(properties, state);
    }
}

fn prepare_peering(prepare: &mut Prepare<'_>) -> Result<(), ArmError> {
    let properties = prepare.properties()?.clone();
    let Some(remote) = fields::reference(&properties, "remoteVirtualNetwork", "properties")? else {
        return Err(fields::missing("properties.remoteVirtualNetwork"));
    };
    let local_id = local_network(&prepare.id.to_id()).to_owned();
    let remote_key = remote.to_ascii_lowercase();
    // A missing remote network is refused with the other references.
    let Some(remote_network) = prepare.state.body(&remote_key).map(std::borrow::Cow::into_owned) else {
        return Ok(());
    };
    let remote_space = space_of(&remote_network);
    if let Some(local) = prepare.state.body(&local_id.to_ascii_lowercase()) {
        let local_space = space_of(&local);
        let overlapping: Vec<String> = local_space
            .iter()
            .flat_map(|mine| {
                remote_space
                    .iter()
                    .filter(move |theirs| mine.overlaps(theirs))
                    .map(move |theirs| format!("{mine} and {theirs}"))
            })
            .collect();
        if !overlapping.is_empty() {
            return Err(ArmError::new(
                StatusCode::BAD_REQUEST,
                "VnetAddressSpacesOverlap",
                format!(
                    "Cannot peer virtual network {local_id} with {remote} because their address spaces overlap: {}.",
                    overlapping.join(", ")
                ),
            ));
        }
    }
    for (flag, default) in [
        ("allowVirtualNetworkAccess", true),
        ("allowForwardedTraffic", false),
        ("allowGatewayTransit", false),
        ("useRemoteGateways", false),
        ("doNotVerifyRemoteGateways", false),
        ("peerCompleteVnets", true),
    ] {
        prepare.default(flag, json!(default))?;
    }
    resource_guid(prepare)?;
    prepare.default("routeServiceVips", json!({}))?;
    let prefixes: Vec<String> = remote_space.iter().map(ToString::to_string).collect();
    let space = json!({ "addressPrefixes": prefixes });
    let properties = prepare.properties()?;
    properties.insert("remoteAddressSpace".into(), space.clone());
    properties.insert("remoteVirtualNetworkAddressSpace".into(), space);
    let connected = peering_back(&remote_network, &local_id).is_some();
    write_state(properties, if connected { CONNECTED } else { INITIATED });
    // The remote side learns that this side now peers back.
    if connected && remote_key != local_id.to_ascii_lowercase() {
        let mut remote_network = remote_network;
        let back_name = peering_back(&remote_network, &local_id)
            .and_then(|peering| peering["name"].as_str())
            .map(str::to_owned);
        if let Some(back_name) = back_name
            && let Some(back) = children::find_mut(&mut remote_network, "virtualNetworkPeerings", &back_name)
        {
            set_state(back, CONNECTED);
            prepare.companions.push(remote_network);
        }
    }
    Ok(())
}

fn space_of(network: &Value) -> Vec<Cidr> {
    network
        .pointer("/properties/addressSpace/addressPrefixes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(Cidr::parse)
        .collect()
}

/// Whether a machine in `network` (a lower-case id) reaches `address`: the address lies in the
/// network's own address space, or in that of a network peered with it both ways, with virtual
/// network access allowed on both sides.
pub(crate) fn reaches(state: &State, network: &str, address: IpAddr) -> bool {
    let Some(local) = state.body(network) else {
        return false;
    };
    let holds = |body: &Value| {
        space_of(body)
            .iter()
            .any(|prefix| prefix.contains_address(address))
    };
    let open =
        |peering: &Value| peering.pointer("/properties/allowVirtualNetworkAccess") != Some(&json!(false));
    holds(&local)
        || children::all(&local, "virtualNetworkPeerings")
            .iter()
            .filter(|peering| open(peering))
            .filter_map(|peering| remote_of(peering))
            .any(|remote| {
                state
                    .body(&remote.to_ascii_lowercase())
                    .is_some_and(|remote| peering_back(&remote, network).is_some_and(&open) && holds(&remote))
            })
}

/// A connected peering whose remote network or peering back is gone shows `Disconnected`.
fn show_state(state: &State, peering: &mut Value) {
    let stored = peering
        .pointer("/properties/peeringState")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let (Some(id), Some(remote)) = (
        peering["id"].as_str().map(str::to_owned),
        remote_of(peering).map(str::to_ascii_lowercase),
    ) else {
        return;
    };
    let local = local_network(&id).to_owned();
    let back = state
        .body(&remote)
        .is_some_and(|network| peering_back(&network, &local).is_some());
    let shown = match (stored.as_str(), back) {
        (CONNECTED | INITIATED, true) => CONNECTED,
        (CONNECTED | DISCONNECTED, false) => DISCONNECTED,
        _ => return,
    };
    if shown != stored {
        set_state(peering, shown);
    }
}
