//! Which addresses a webhook may reach: only globally routable ones, so that a tenant
//! cannot make the server call into its own network.
//!
//! A pure function, moved out of the domain with the HTTP driver (the domain opens no socket): the driver
//! is its only user, and the policy is read best beside the resolver that enforces it
//! ([`super::resolve`]). The rule is an allow-list for IPv6 and a deny-list for IPv4, both from the IANA
//! special-purpose registries (RFC 6890 and updates):
//!
//! * **IPv4**: refused are `0/8`, `10/8`, `100.64/10` (CGN), `127/8`, `169.254/16`,
//!   `172.16/12`, `192.0.0/24` (IETF protocol assignments), `192.0.2/24`,
//!   `192.88.99/24` (6to4 relays), `192.168/16`, `198.18/15`, `198.51.100/24`,
//!   `203.0.113/24`, `224/4` (multicast) and `240/4` (reserved, broadcast).
//! * **IPv6**: only global unicast `2000::/3` can pass, so `::`, `::1`, IPv4-compatible
//!   `::a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96` and
//!   `64:ff9b:1::/48`, discard `100::/64`, ULA `fc00::/7`, link-local `fe80::/10` and
//!   multicast are refused whatever they embed. Inside `2000::/3`, refused are
//!   `2001::/23` (IETF protocol assignments, Teredo included), `2001:db8::/32` and
//!   `3fff::/20` (documentation), `2002::/16` (6to4, which embeds any IPv4 address) and
//!   `5f00::/16` (SRv6 SIDs).
//! * **IPv4-mapped** `::ffff:a.b.c.d` is judged as the IPv4 address it is: a dual-stack
//!   socket connects to exactly that address.
//!
//! An address that embeds IPv4 is refused rather than decoded: a receiver that needs a
//! translator can be given its IPv4 address, and a decoder is one more place to be wrong.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 prefixes that are not globally reachable.
const V4_DENIED: &[(u32, u8)] = &[
    (0x0000_0000, 8),  // 0.0.0.0/8: "this network"
    (0x0a00_0000, 8),  // 10.0.0.0/8: private
    (0x6440_0000, 10), // 100.64.0.0/10: shared address space (CGN)
    (0x7f00_0000, 8),  // 127.0.0.0/8: loopback
    (0xa9fe_0000, 16), // 169.254.0.0/16: link-local
    (0xac10_0000, 12), // 172.16.0.0/12: private
    (0xc000_0000, 24), // 192.0.0.0/24: IETF protocol assignments
    (0xc000_0200, 24), // 192.0.2.0/24: documentation
    (0xc058_6300, 24), // 192.88.99.0/24: 6to4 relay anycast (deprecated)
    (0xc0a8_0000, 16), // 192.168.0.0/16: private
    (0xc612_0000, 15), // 198.18.0.0/15: benchmarking
    (0xc633_6400, 24), // 198.51.100.0/24: documentation
    (0xcb00_7100, 24), // 203.0.113.0/24: documentation
    (0xe000_0000, 4),  // 224.0.0.0/4: multicast
    (0xf000_0000, 4),  // 240.0.0.0/4: reserved, and 255.255.255.255
];

/// Prefixes inside `2000::/3` that are not globally reachable (or embed IPv4).
const V6_DENIED: &[(u128, u8)] = &[
    (0x2001_0000 << 96, 23), // 2001::/23: IETF protocol assignments (Teredo, ...)
    (0x2001_0db8 << 96, 32), // 2001:db8::/32: documentation
    (0x2002 << 112, 16),     // 2002::/16: 6to4
    (0x3fff << 112, 20),     // 3fff::/20: documentation
    (0x5f00 << 112, 16),     // 5f00::/16: SRv6 SIDs
];

/// Whether `a` is inside `net/len` (IPv4).
fn in_v4(a: u32, (net, len): (u32, u8)) -> bool {
    let shift = 32 - u32::from(len);
    a.checked_shr(shift).unwrap_or(0) == net.checked_shr(shift).unwrap_or(0)
}

/// Whether `a` is inside `net/len` (IPv6).
fn in_v6(a: u128, (net, len): (u128, u8)) -> bool {
    let shift = 128 - u32::from(len);
    a.checked_shr(shift).unwrap_or(0) == net.checked_shr(shift).unwrap_or(0)
}

/// Whether `ip` is a globally routable address a webhook may be delivered to.
pub(crate) fn is_global(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_global_v4(v4),
        IpAddr::V6(v6) => is_global_v6(v6),
    }
}

fn is_global_v4(v4: Ipv4Addr) -> bool {
    let a = u32::from(v4);
    !V4_DENIED.iter().any(|&p| in_v4(a, p))
}

fn is_global_v6(v6: Ipv6Addr) -> bool {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return is_global_v4(v4);
    }
    let a = u128::from(v6);
    in_v6(a, (0x2000 << 112, 3)) && !V6_DENIED.iter().any(|&p| in_v6(a, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global(s: &str) -> bool {
        is_global(s.parse().unwrap_or_else(|_| panic!("{s}")))
    }

    /// One line per form the issue lists, then the rest of the registries.
    #[test]
    fn every_non_global_form_is_refused() {
        for s in [
            "::127.0.0.1",      // IPv4-compatible loopback
            "::ffff:0:7f00:1",  // IPv4-translated loopback (SIIT)
            "64:ff9b::7f00:1",  // NAT64 of 127.0.0.1
            "64:ff9b::808:808", // NAT64 of a public address: refused too
            "64:ff9b:1::1",     // local-use NAT64
            "2002:7f00:1::1",   // 6to4 of 127.0.0.1
            "2002:808:808::1",  // 6to4 of a public address
            "192.0.0.1",        // IETF protocol assignments
            "192.0.0.170",
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254", // cloud metadata
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "192.0.2.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.1",
            "203.0.113.1",
            "192.88.99.1",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1", // IPv4-mapped loopback
            "::ffff:10.0.0.1",
            "100::1", // discard
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "2001::1", // Teredo
            "2001:db8::1",
            "2001:2::1", // benchmarking
            "3fff::1",
            "5f00::1",
        ] {
            assert!(!global(s), "{s} must not pass");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for s in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "192.0.1.1",
            "198.20.0.1",
            "100.128.0.1",
            "::ffff:8.8.8.8",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2001:4860:4860::8888",
        ] {
            assert!(global(s), "{s} must pass");
        }
    }
}
