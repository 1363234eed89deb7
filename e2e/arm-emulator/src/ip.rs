//! IP prefixes (CIDR): parsing, containment and host addresses, for subnets, private and public IPs.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address prefix such as `10.0.0.0/16` or `fd00::/64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cidr {
    address: IpAddr,
    length: u8,
}

impl Cidr {
    /// Parses `address/length`; the address is normalised to the start of the prefix.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (address, length) = text.split_once('/')?;
        let address: IpAddr = address.parse().ok()?;
        let length: u8 = length.parse().ok()?;
        let bits = Self::bits_of(address);
        if length > bits {
            return None;
        }
        Some(Self {
            address: Self::from_number(address, Self::number(address) & Self::mask(bits, length)),
            length,
        })
    }

    fn bits_of(address: IpAddr) -> u8 {
        if address.is_ipv4() { 32 } else { 128 }
    }

    fn number(address: IpAddr) -> u128 {
        match address {
            IpAddr::V4(v4) => u128::from(u32::from(v4)),
            IpAddr::V6(v6) => u128::from(v6),
        }
    }

    fn from_number(like: IpAddr, number: u128) -> IpAddr {
        match like {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(
                u32::try_from(number & 0xffff_ffff).unwrap_or_default(),
            )),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(number)),
        }
    }

    fn mask(bits: u8, length: u8) -> u128 {
        let all = if bits == 32 {
            u128::from(u32::MAX)
        } else {
            u128::MAX
        };
        // A full-length prefix (/128) would shift by the whole width, which overflows.
        all & !all.checked_shr(u32::from(length)).unwrap_or(0)
    }

    /// Whether this is an IPv4 prefix.
    pub(crate) fn is_ipv4(&self) -> bool {
        self.address.is_ipv4()
    }

    /// The prefix length.
    pub(crate) fn length(&self) -> u8 {
        self.length
    }

    /// Whether `other` lies inside this prefix.
    pub(crate) fn contains(&self, other: &Self) -> bool {
        self.is_ipv4() == other.is_ipv4()
            && other.length >= self.length
            && Self::number(other.address) & Self::mask(Self::bits_of(self.address), self.length)
                == Self::number(self.address)
    }

    /// Whether the two prefixes share an address.
    pub(crate) fn overlaps(&self, other: &Self) -> bool {
        self.contains(other) || other.contains(self)
    }

    /// Whether `address` lies inside this prefix.
    pub(crate) fn contains_address(&self, address: IpAddr) -> bool {
        self.contains(&Self {
            address,
            length: Self::bits_of(address),
        })
    }

    /// How many addresses it holds (saturating for huge IPv6 prefixes).
    pub(crate) fn size(&self) -> u128 {
        let host_bits = Self::bits_of(self.address) - self.length;
        1u128.checked_shl(u32::from(host_bits)).unwrap_or(u128::MAX)
    }

    /// Where `address` lies in the prefix: the `index` of [`Self::host`].
    pub(crate) fn index_of(&self, address: IpAddr) -> Option<u128> {
        self.contains_address(address)
            .then(|| Self::number(address) - Self::number(self.address))
    }

    /// The `index`th address of the prefix.
    pub(crate) fn host(&self, index: u128) -> Option<IpAddr> {
        (index < self.size()).then(|| Self::from_number(self.address, Self::number(self.address) + index))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.length)
    }
}

#[cfg(test)]
mod tests {
    use super::Cidr;

    #[test]
    fn prefixes_parse_and_compare() {
        let vnet = Cidr::parse("10.0.0.0/16").unwrap();
        let subnet = Cidr::parse("10.0.1.0/24").unwrap();
        assert!(vnet.contains(&subnet));
        assert!(!subnet.contains(&vnet));
        assert!(subnet.overlaps(&vnet));
        assert!(!subnet.overlaps(&Cidr::parse("10.0.2.0/24").unwrap()));
        assert_eq!(Cidr::parse("10.0.1.7/24").unwrap().to_string(), "10.0.1.0/24");
        assert_eq!(subnet.size(), 256);
        assert_eq!(subnet.host(4).unwrap().to_string(), "10.0.1.4");
        assert_eq!(subnet.host(256), None);
        assert_eq!(subnet.index_of("10.0.1.4".parse().unwrap()), Some(4));
        assert_eq!(subnet.index_of("10.0.2.4".parse().unwrap()), None);
        let v6 = Cidr::parse("fd00:1::/64").unwrap();
        assert!(!v6.is_ipv4());
        assert!(!vnet.overlaps(&v6));
        assert_eq!(v6.host(5).unwrap().to_string(), "fd00:1::5");
        let host = Cidr::parse("fd00:1::1/128").unwrap();
        assert_eq!(host.to_string(), "fd00:1::1/128");
        assert!(host.contains(&host) && v6.contains(&host) && !host.contains(&v6));
        assert_eq!(host.size(), 1);
        let everything = Cidr::parse("::/0").unwrap();
        assert!(everything.contains(&host) && everything.size() == u128::MAX);
        assert!(Cidr::parse("0.0.0.0/0").unwrap().contains(&subnet));
        for bad in ["10.0.0.0", "10.0.0.0/33", "x/8", "fd00::/129"] {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
    }
}
