//! IP address ranges in CIDR notation, as the network fields of the CRDs carry them.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// An address range such as `10.0.0.0/16` or `2001:1234:5678:9a00::/56`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

/// Why a text is not a CIDR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CidrError(String);

impl fmt::Display for CidrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CidrError {}

fn bits(addr: IpAddr) -> (u128, u8) {
    match addr {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        IpAddr::V6(v6) => (u128::from(v6), 128),
    }
}

/// The mask selecting the first `prefix` of `width` bits.
fn mask(prefix: u8, width: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        let all = if width == 128 {
            u128::MAX
        } else {
            (1u128 << width) - 1
        };
        all & !((1u128 << (width - prefix)) - 1)
    }
}

impl Cidr {
    /// Whether the range is IPv6.
    #[must_use]
    pub fn is_ipv6(&self) -> bool {
        self.network.is_ipv6()
    }

    /// The prefix length.
    #[must_use]
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// The first address of the range.
    #[must_use]
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// The `index`th range of prefix length `prefix` inside this one, if there is one.
    #[must_use]
    pub fn subrange(&self, prefix: u8, index: u128) -> Option<Cidr> {
        let (net, width) = bits(self.network);
        if prefix < self.prefix || prefix > width || index >> (prefix - self.prefix) != 0 {
            return None;
        }
        let start = net | index.checked_shl(u32::from(width - prefix))?;
        let network = match self.network {
            IpAddr::V4(_) => IpAddr::V4(u32::try_from(start).ok()?.into()),
            IpAddr::V6(_) => IpAddr::V6(start.into()),
        };
        Some(Self { network, prefix })
    }

    /// How many ranges of prefix length `prefix` this one holds (0 when `prefix` is shorter).
    #[must_use]
    pub fn count(&self, prefix: u8) -> u128 {
        prefix
            .checked_sub(self.prefix)
            .and_then(|bits| 1u128.checked_shl(u32::from(bits)))
            .unwrap_or(0)
    }

    /// Whether `addr` lies in the range.
    #[must_use]
    pub fn contains_ip(&self, addr: IpAddr) -> bool {
        if addr.is_ipv6() != self.is_ipv6() {
            return false;
        }
        let (net, width) = bits(self.network);
        let (other, _) = bits(addr);
        other & mask(self.prefix, width) == net
    }

    /// Whether every address of `other` lies in this range.
    #[must_use]
    pub fn contains(&self, other: &Cidr) -> bool {
        other.prefix >= self.prefix && self.contains_ip(other.network)
    }

    /// Whether the two ranges share an address.
    #[must_use]
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.contains(other) || other.contains(self)
    }
}

impl FromStr for Cidr {
    type Err = CidrError;

    /// Parses `address/prefix`. Host bits may be set (as Go's parser allows); the range starts at
    /// the masked address.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || {
            CidrError(format!(
                "{text:?} is not an address range in CIDR notation (for example 10.0.0.0/16)"
            ))
        };
        let (addr, prefix) = text.split_once('/').ok_or_else(invalid)?;
        let addr: IpAddr = addr.parse().map_err(|_| invalid())?;
        if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        let prefix: u8 = prefix.parse().map_err(|_| invalid())?;
        let (value, width) = bits(addr);
        if prefix > width {
            return Err(invalid());
        }
        let masked = value & mask(prefix, width);
        let network = match addr {
            IpAddr::V4(_) => IpAddr::V4(u32::try_from(masked).map_err(|_| invalid())?.into()),
            IpAddr::V6(_) => IpAddr::V6(masked.into()),
        };
        Ok(Self { network, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(text: &str) -> Cidr {
        text.parse().unwrap()
    }

    #[test]
    fn containment_and_overlap() {
        let vnet = cidr("10.0.0.0/8");
        assert!(vnet.contains(&cidr("10.1.0.0/16")));
        assert!(!vnet.contains(&cidr("11.0.0.0/16")));
        assert!(!cidr("10.1.0.0/16").contains(&vnet));
        assert!(cidr("10.1.0.0/16").overlaps(&vnet));
        assert!(!cidr("10.1.0.0/16").overlaps(&cidr("10.2.0.0/16")));
        assert!(cidr("10.0.0.0/16").contains_ip("10.0.0.100".parse().unwrap()));
        assert!(!cidr("10.0.0.0/16").contains_ip("10.1.0.100".parse().unwrap()));
        assert!(cidr("0.0.0.0/0").contains(&cidr("192.168.0.0/24")));
        let v6 = cidr("2001:1234:5678:9a00::/56");
        assert!(v6.is_ipv6());
        assert!(v6.contains(&cidr("2001:1234:5678:9a01::/64")));
        assert!(!v6.contains(&cidr("10.0.0.0/24")));
        assert!(cidr("::/0").contains(&v6));
    }

    #[test]
    fn subranges() {
        let vnet = cidr("10.0.0.0/8");
        assert_eq!(vnet.subrange(16, 3), Some(cidr("10.3.0.0/16")));
        assert_eq!(
            vnet.subrange(27, vnet.count(27) - 1),
            Some(cidr("10.255.255.224/27"))
        );
        assert_eq!(vnet.subrange(16, 256), None);
        assert_eq!(vnet.subrange(7, 0), None);
        assert_eq!(
            cidr("2001:db8::/56").subrange(64, 2),
            Some(cidr("2001:db8:0:2::/64"))
        );
        assert_eq!(vnet.count(6), 0);
    }

    #[test]
    fn host_bits_are_masked_and_junk_rejected() {
        assert_eq!(cidr("10.0.0.1/16").to_string(), "10.0.0.0/16");
        assert_eq!(cidr("2001:db8::1/32").to_string(), "2001:db8::/32");
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "10.0.0.0/-1",
            "10.0.0/8",
            "10.0.0.0/",
            "x/8",
            "::/129",
            "10.0.0.0/+8",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
    }
}
