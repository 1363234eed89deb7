//! Address allocation: public IPs and prefixes from the configured public pool, private IPs from
//! subnets (Azure keeps the first four addresses and the last of every subnet for itself).

use std::collections::BTreeSet;
use std::net::IpAddr;

use axum::http::StatusCode;
use serde_json::Value;

use crate::error::ArmError;
use crate::ip::Cidr;
use crate::resources::embedded;
use crate::state::State;

const PUBLIC_IP: &str = "Microsoft.Network/publicIPAddresses";
const PUBLIC_PREFIX: &str = "Microsoft.Network/publicIPPrefixes";
/// Where IPv6 public addresses come from.
const PUBLIC_IPV6_POOL: &str = "2603:1030:c00::/48";
/// How many candidates to try before calling a range full; keeps a huge IPv6 range cheap.
const SEARCH_LIMIT: u128 = 1 << 20;

/// Public addresses and prefixes already handed out, except those of the resource `except`.
fn public_in_use(state: &State, except: &str) -> (BTreeSet<IpAddr>, Vec<Cidr>) {
    let mut addresses = BTreeSet::new();
    let mut prefixes = Vec::new();
    for (key, stored) in &state.resources {
        if **key == *except {
            continue;
        }
        if stored.type_name == PUBLIC_IP {
            if let Some(address) = stored
                .body()
                .pointer("/properties/ipAddress")
                .and_then(Value::as_str)
                .and_then(|a| a.parse().ok())
            {
                addresses.insert(address);
            }
        } else if stored.type_name == PUBLIC_PREFIX
            && let Some(prefix) = stored
                .body()
                .pointer("/properties/ipPrefix")
                .and_then(Value::as_str)
                .and_then(Cidr::parse)
        {
            prefixes.push(prefix);
        }
    }
    (addresses, prefixes)
}

fn exhausted(what: &str) -> ArmError {
    ArmError::new(
        StatusCode::CONFLICT,
        "PublicIPCountLimitReached",
        format!("No free {what} is left in the emulator's public address pool; widen `publicIpPool`."),
    )
}

fn pool(configured: &str, ipv6: bool) -> Result<Cidr, ArmError> {
    let text = if ipv6 { PUBLIC_IPV6_POOL } else { configured };
    Cidr::parse(text).ok_or_else(|| {
        ArmError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            format!("The emulator's public address pool '{text}' is not a CIDR prefix."),
        )
    })
}

/// A free public address: from `prefix` when given, else from the pool outside every prefix.
pub(crate) fn public_address(
    state: &State,
    configured_pool: &str,
    ipv6: bool,
    prefix: Option<Cidr>,
    except: &str,
) -> Result<IpAddr, ArmError> {
    let (used, prefixes) = public_in_use(state, except);
    let range = match prefix {
        Some(prefix) => prefix,
        None => pool(configured_pool, ipv6)?,
    };
    (1..range.size().min(SEARCH_LIMIT))
        .filter_map(|index| range.host(index))
        .find(|address| {
            !used.contains(address)
                && (prefix.is_some() || !prefixes.iter().any(|p| p.contains_address(*address)))
        })
        .ok_or_else(|| exhausted("public IP address"))
}

/// A free, aligned public prefix of `length` bits.
pub(crate) fn public_prefix(
    state: &State,
    configured_pool: &str,
    ipv6: bool,
    length: u8,
    except: &str,
) -> Result<Cidr, ArmError> {
    let (used, prefixes) = public_in_use(state, except);
    let range = pool(configured_pool, ipv6)?;
    let bits = if ipv6 { 128 } else { 32 };
    if length < range.length() || length > bits {
        return Err(ArmError::invalid_parameter(
            "properties.prefixLength",
            format!("The prefix length {length} does not fit the public address pool {range}."),
        ));
    }
    let block = 1u128 << (bits - length);
    let blocks = (range.size() / block).min(SEARCH_LIMIT);
    // Prefixes come from the top of the pool so single addresses (from the bottom) rarely collide.
    (0..blocks)
        .rev()
        .filter_map(|index| range.host(index * block))
        .filter_map(|start| Cidr::parse(&format!("{start}/{length}")))
        .find(|candidate| {
            !prefixes.iter().any(|p| p.overlaps(candidate))
                && !used.iter().any(|a| candidate.contains_address(*a))
        })
        .ok_or_else(|| exhausted("public IP prefix"))
}

/// The prefixes of the subnet with this lower-cased id, if it exists.
pub(crate) fn subnet_prefixes(state: &State, subnet_key: &str) -> Option<Vec<Cidr>> {
    let (network, name) = subnet_key.rsplit_once("/subnets/")?;
    let network = state.body(network)?;
    embedded::find(&network, "subnets", name).map(super::virtual_networks::subnet_prefixes)
}

/// Private addresses taken in a subnet, except by holders under `except` (the resource being
/// written keeps its own addresses).
fn private_in_use<'a>(
    state: &'a State,
    subnet_key: &'a str,
    except: &'a str,
) -> impl Iterator<Item = IpAddr> + 'a {
    // The index keeps each holder's address: no document is read.
    state
        .referrers_of(subnet_key)
        .filter(|referrer| !starts_with_ignoring_case(referrer.holder, except))
        .filter_map(|referrer| referrer.address)
}

/// Whether `text` starts with `prefix`, ignoring ASCII case. Ids in one resource group share
/// long beginnings, so the comparison runs from the end of the prefix, where they differ.
fn starts_with_ignoring_case(text: &str, prefix: &str) -> bool {
    text.as_bytes().get(..prefix.len()).is_some_and(|start| {
        start
            .iter()
            .rev()
            .zip(prefix.as_bytes().iter().rev())
            .all(|(a, b)| a.eq_ignore_ascii_case(b))
    })
}

/// A private address in the subnet: `requested` (static) if free and inside it, else the first
/// free one.
pub(crate) fn private_address(
    state: &State,
    subnet_id: &str,
    ipv6: bool,
    requested: Option<&str>,
    except: &str,
    property: &str,
) -> Result<IpAddr, ArmError> {
    private_address_besides(state, subnet_id, ipv6, requested, except, property, &[])
}

/// As [`private_address`], also keeping clear of `besides`: addresses the same write has handed
/// out already (a scale set's new instances).
pub(crate) fn private_address_besides(
    state: &State,
    subnet_id: &str,
    ipv6: bool,
    requested: Option<&str>,
    except: &str,
    property: &str,
    besides: &[IpAddr],
) -> Result<IpAddr, ArmError> {
    let key = subnet_id.to_ascii_lowercase();
    let prefixes = subnet_prefixes(state, &key).ok_or_else(|| ArmError::not_found(subnet_id))?;
    let Some(range) = prefixes.into_iter().find(|prefix| prefix.is_ipv4() != ipv6) else {
        return Err(ArmError::invalid_parameter(
            property,
            format!(
                "Subnet {subnet_id} has no {} address prefix.",
                if ipv6 { "IPv6" } else { "IPv4" }
            ),
        ));
    };
    if let Some(requested) = requested {
        let address: IpAddr = requested.parse().map_err(|_| {
            ArmError::invalid_parameter(property, format!("'{requested}' is not an IP address."))
        })?;
        if !range.contains_address(address) {
            return Err(ArmError::new(
                StatusCode::BAD_REQUEST,
                "PrivateIPAddressNotInSubnet",
                format!("IP address {address} does not belong to subnet {subnet_id}."),
            ));
        }
        if private_in_use(state, &key, except)
            .chain(besides.iter().copied())
            .any(|used| used == address)
        {
            return Err(ArmError::new(
                StatusCode::BAD_REQUEST,
                "PrivateIPAddressInUse",
                format!("IP address {address} in subnet {subnet_id} is already in use."),
            ));
        }
        return Ok(address);
    }
    let last = range.size().saturating_sub(1).min(SEARCH_LIMIT);
    // One bit per candidate, set for those in use: the subnet's interfaces are walked once, not
    // once per candidate.
    let slots = usize::try_from(last).unwrap_or_default();
    let mut taken = vec![0_u64; slots.div_ceil(64)];
    for address in private_in_use(state, &key, except).chain(besides.iter().copied()) {
        if let Some(index) = range
            .index_of(address)
            .and_then(|index| usize::try_from(index).ok())
            .filter(|index| *index < slots)
        {
            taken[index / 64] |= 1 << (index % 64);
        }
    }
    (4..slots)
        .find(|index| taken[index / 64] & (1 << (index % 64)) == 0)
        .and_then(|index| range.host(u128::try_from(index).ok()?))
        .ok_or_else(|| {
            ArmError::new(
                StatusCode::BAD_REQUEST,
                "SubnetIsFull",
                format!("Subnet {subnet_id} has no free IP address left."),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::starts_with_ignoring_case;

    #[test]
    fn prefixes_compare_ignoring_case() {
        assert!(starts_with_ignoring_case(
            "/Sub/NIC-1/ipConfigurations/a",
            "/sub/nic-1"
        ));
        assert!(starts_with_ignoring_case("/sub/nic-1", "/sub/nic-1"));
        assert!(!starts_with_ignoring_case(
            "/sub/nic-2/ipConfigurations/a",
            "/sub/nic-1"
        ));
        assert!(!starts_with_ignoring_case("/sub/nic", "/sub/nic-1"));
    }
}
