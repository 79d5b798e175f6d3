//! What one packet a server sent says about where it went: the first
//! packet of a TCP connection (`SYN` without `ACK`) or a UDP datagram,
//! IPv4 or IPv6, read from the network layer up ([`sent`]); for a
//! datagram to port 53, the name a DNS query asks for. Everything else
//! (answers, acknowledgements, ICMP, fragments, IPv6 extension headers)
//! is `None`. Read from the private network's loopback by
//! [`crate::netns`]; nothing here trusts a length it was given.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Where a packet was going.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sent {
    /// A TCP connection asked for.
    Connect(SocketAddr),
    /// A UDP datagram.
    Datagram {
        /// Its destination.
        to: SocketAddr,
        /// The name it asks for, where it is a DNS query (escaped).
        lookup: Option<String>,
    },
}

impl fmt::Display for Sent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sent::Connect(to) => write!(f, "TCP to {to}"),
            Sent::Datagram { to, lookup: None } => write!(f, "UDP to {to}"),
            Sent::Datagram {
                to,
                lookup: Some(name),
            } => write!(f, "UDP to {to} (a DNS lookup of `{name}`)"),
        }
    }
}

const TCP: u8 = 6;
const UDP: u8 = 17;
const SYN: u8 = 0x02;
const ACK: u8 = 0x10;

/// Where `packet` (an IP packet, its link header removed) was going, if it
/// opens a TCP connection or is a UDP datagram.
pub fn sent(packet: &[u8]) -> Option<Sent> {
    let (to, proto, rest) = match packet.first()? >> 4 {
        4 => {
            let header = usize::from(packet[0] & 0x0f) * 4;
            let fragment = u16::from_be_bytes([*packet.get(6)?, *packet.get(7)?]) & 0x1fff;
            let dst: [u8; 4] = packet.get(16..20)?.try_into().ok()?;
            if header < 20 || fragment != 0 {
                return None;
            }
            (
                IpAddr::V4(Ipv4Addr::from(dst)),
                *packet.get(9)?,
                packet.get(header..)?,
            )
        }
        6 => {
            let dst: [u8; 16] = packet.get(24..40)?.try_into().ok()?;
            (
                IpAddr::V6(Ipv6Addr::from(dst)),
                *packet.get(6)?,
                packet.get(40..)?,
            )
        }
        _ => return None,
    };
    let port = u16::from_be_bytes([*rest.get(2)?, *rest.get(3)?]);
    let to = SocketAddr::new(to, port);
    match proto {
        TCP => {
            let flags = *rest.get(13)?;
            (flags & SYN != 0 && flags & ACK == 0).then_some(Sent::Connect(to))
        }
        UDP => {
            let lookup = match port {
                53 => rest.get(8..).and_then(dns_question),
                _ => None,
            };
            Some(Sent::Datagram { to, lookup })
        }
        _ => None,
    }
}

/// The longest name a DNS message may carry, in its written form.
const NAME_MAX: usize = 253;

/// The name of a DNS query's first question, escaped; `None` for an
/// answer, a query without a question or a malformed name.
fn dns_question(message: &[u8]) -> Option<String> {
    let flags = u16::from_be_bytes([*message.get(2)?, *message.get(3)?]);
    let questions = u16::from_be_bytes([*message.get(4)?, *message.get(5)?]);
    if flags & 0x8000 != 0 || questions == 0 {
        return None;
    }
    let mut labels = Vec::new();
    let mut at = 12;
    loop {
        let len = usize::from(*message.get(at)?);
        if len == 0 {
            break;
        }
        // A pointer (0xc0) or a reserved label type: not in a question.
        if len > 63 {
            return None;
        }
        let label = message.get(at + 1..at + 1 + len)?;
        labels.push(String::from_utf8_lossy(label).into_owned());
        at += 1 + len;
    }
    let name = labels.join(".");
    // Shown between backticks: a backtick in it is escaped too.
    (!name.is_empty() && name.len() <= NAME_MAX)
        .then(|| crate::text::escape(&name).replace('`', "\\u{60}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4(proto: u8, dst: [u8; 4], transport: &[u8]) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0, 127, 0, 0, 1];
        p.extend(dst);
        p.extend(transport);
        p
    }

    fn ipv6(proto: u8, dst: Ipv6Addr, transport: &[u8]) -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0, 0, 0, proto, 64];
        p.extend(Ipv6Addr::LOCALHOST.octets());
        p.extend(dst.octets());
        p.extend(transport);
        p
    }

    fn tcp(port: u16, flags: u8) -> Vec<u8> {
        let mut t = vec![0xc3, 0x50];
        t.extend(port.to_be_bytes());
        t.extend([0; 9]);
        t.push(flags);
        t.extend([0; 6]);
        t
    }

    fn udp(port: u16, payload: &[u8]) -> Vec<u8> {
        let mut u = vec![0xc3, 0x51];
        u.extend(port.to_be_bytes());
        u.extend([0; 4]);
        u.extend(payload);
        u
    }

    fn query(flags: u16, name: &[&[u8]]) -> Vec<u8> {
        let mut q = vec![0x12, 0x34];
        q.extend(flags.to_be_bytes());
        q.extend([0, 1, 0, 0, 0, 0, 0, 0]);
        for label in name {
            q.push(label.len() as u8);
            q.extend(*label);
        }
        q.extend([0, 0, 1, 0, 1]);
        q
    }

    #[test]
    fn a_connection_is_its_first_packet_only() {
        let syn = ipv4(TCP, [10, 1, 2, 3], &tcp(5432, SYN));
        assert_eq!(
            sent(&syn).map(|s| s.to_string()).as_deref(),
            Some("TCP to 10.1.2.3:5432")
        );
        for flags in [SYN | ACK, ACK, 0x04, 0x18] {
            assert_eq!(sent(&ipv4(TCP, [10, 1, 2, 3], &tcp(5432, flags))), None);
        }
        let v6 = ipv6(TCP, "fd00::1".parse().unwrap(), &tcp(443, SYN));
        assert_eq!(sent(&v6).unwrap().to_string(), "TCP to [fd00::1]:443");
    }

    #[test]
    fn a_datagram_to_port_53_names_its_lookup_escaped() {
        let q = query(0x0100, &[b"telemetry", b"example", b"com"]);
        let lookup = sent(&ipv4(UDP, [127, 0, 0, 53], &udp(53, &q))).unwrap();
        assert_eq!(
            lookup.to_string(),
            "UDP to 127.0.0.53:53 (a DNS lookup of `telemetry.example.com`)"
        );
        let hostile = query(0x0100, &[b"a`\x1b[2Jb"]);
        let shown = sent(&ipv4(UDP, [127, 0, 0, 53], &udp(53, &hostile)))
            .unwrap()
            .to_string();
        assert_eq!(
            shown,
            "UDP to 127.0.0.53:53 (a DNS lookup of `a\\u{60}\\u{1b}[2Jb`)"
        );
        // An answer, a pointer, a name cut short: a datagram, no lookup.
        let answer = query(0x8180, &[b"example", b"com"]);
        let mut pointer = query(0x0100, &[]);
        pointer.splice(12..13, [0xc0, 0x0c]);
        let mut cut = query(0x0100, &[b"example"]);
        cut.truncate(16);
        for payload in [answer, pointer, cut, vec![0; 5]] {
            let d = sent(&ipv6(UDP, Ipv6Addr::LOCALHOST, &udp(53, &payload)));
            assert_eq!(
                d,
                Some(Sent::Datagram {
                    to: "[::1]:53".parse().unwrap(),
                    lookup: None
                })
            );
        }
        let other = sent(&ipv4(UDP, [127, 0, 0, 1], &udp(9, &q))).unwrap();
        assert_eq!(other.to_string(), "UDP to 127.0.0.1:9");
    }

    #[test]
    fn what_is_not_a_first_packet_or_is_cut_short_is_none() {
        let syn = ipv4(TCP, [10, 1, 2, 3], &tcp(5432, SYN));
        for len in 0..34 {
            assert_eq!(sent(&syn[..len]), None, "{len}");
        }
        let mut fragment = syn.clone();
        fragment[7] = 8;
        assert_eq!(sent(&fragment), None);
        let mut short_header = syn.clone();
        short_header[0] = 0x44;
        assert_eq!(sent(&short_header), None);
        assert_eq!(sent(&ipv4(1, [10, 1, 2, 3], &[8, 0, 0, 0])), None);
        assert_eq!(sent(&[0x20; 60]), None);
    }
}
