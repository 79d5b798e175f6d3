//! `--private-network`: the stdio server started in a network namespace of
//! its own, where nothing it sends leaves the machine. The namespace has
//! only its loopback, and every address is local to it (`local` routes for
//! `0.0.0.0/0` and `::/0`): a connection to a private range, the cloud
//! metadata address or the loopback reaches whatever listens on that port
//! there — the audit's [`Listener`](crate::fetch::Listener), bound inside —
//! and any other is refused at once. The namespace's own TCP and UDP
//! counters ([`Traffic`]) show what the server sent that the listener did
//! not take: connections and datagrams to other ports or other servers
//! (told part by part by [`crate::effects`]). A packet socket on the
//! namespace's loopback, opened before the server starts, tells where
//! they went ([`PrivateNetwork::sent`]): every packet a process there
//! sends passes through it, so the first packet of each connection and
//! each datagram is read there, and a DNS query's name with it.
//!
//! Made with `ip netns add` (root, or `CAP_SYS_ADMIN`, and iproute2's `ip`):
//! the namespace is held by a descriptor, its name removed at once. The
//! audit's threads enter it with `setns(2)` on threads of their own made
//! for the purpose; the rest of the audit stays in the host's namespace.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Command, Stdio};

use rustix::io::Errno;
use rustix::net::{AddressFamily, RecvFlags, SocketFlags, SocketType, eth};
use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

use crate::packet::Sent;

/// Where iproute2's `ip` is looked for, in turn.
const IP: &[&str] = &["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"];

/// A network namespace of the audit's, every address local to it.
#[derive(Debug)]
pub struct PrivateNetwork {
    ns: OwnedFd,
    /// The packet socket on its loopback, where it could be opened
    /// (`CAP_NET_RAW`); without it the counters still count.
    capture: Option<OwnedFd>,
}

impl PrivateNetwork {
    /// Makes the namespace, its loopback up and every address routed to
    /// it. Fails, leaving nothing behind, where the audit may not make
    /// network namespaces or `ip` is missing.
    pub fn new() -> io::Result<Self> {
        let ip = IP
            .iter()
            .find(|p| std::path::Path::new(p).exists())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "iproute2's ip not found"))?;
        let mut tag = [0u8; 6];
        getrandom::fill(&mut tag).map_err(|e| io::Error::other(e.to_string()))?;
        let name = format!("hardened-mcp-audit-{}", hex(&tag));
        run(ip, &["netns", "add", &name])?;
        let made = (|| {
            for args in [
                &["link", "set", "lo", "up"][..],
                &["route", "add", "local", "0.0.0.0/0", "dev", "lo"],
                &["-6", "route", "add", "local", "::/0", "dev", "lo"],
            ] {
                run(ip, &[&["-n", &name][..], args].concat())?;
            }
            Ok::<_, io::Error>(OwnedFd::from(std::fs::File::open(format!(
                "/run/netns/{name}"
            ))?))
        })();
        // The descriptor holds the namespace: its name goes either way.
        let deleted = run(ip, &["netns", "delete", &name]);
        let ns = made?;
        deleted?;
        let mut net = Self { ns, capture: None };
        net.capture = net.within(capture).ok();
        Ok(net)
    }

    /// Where what was sent since the last call went, as read from the
    /// loopback (each packet is seen going out and coming in: a
    /// destination may be listed twice; the counters of [`Self::traffic`]
    /// count). Empty without the packet socket; packets beyond its buffer
    /// (8 MiB) are lost to it.
    pub fn sent(&self) -> Vec<Sent> {
        let Some(capture) = &self.capture else {
            return Vec::new();
        };
        let mut sent = Vec::new();
        // The headers and a DNS question: the rest of a packet is cut off.
        let mut buf = [0u8; 512];
        loop {
            match rustix::net::recv(capture, &mut buf[..], RecvFlags::TRUNC) {
                Ok((read, _)) => sent.extend(crate::packet::sent(&buf[..read])),
                Err(Errno::INTR) => continue,
                Err(_) => return sent,
            }
        }
    }

    /// Runs `f` on a thread of its own inside the namespace: what it
    /// opens (sockets) and starts (processes) belongs to the namespace.
    pub fn within<T: Send>(&self, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                move_into_link_name_space(self.ns.as_fd(), Some(LinkNameSpaceType::Network))?;
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("a thread in the private network panicked")))
        })
    }

    /// The namespace's TCP and UDP counters so far.
    pub fn traffic(&self) -> io::Result<Traffic> {
        self.within(|| {
            let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp")?;
            let snmp6 = std::fs::read_to_string("/proc/thread-self/net/snmp6").unwrap_or_default();
            Traffic::parse(&snmp, &snmp6).ok_or_else(|| io::Error::other("unreadable counters"))
        })
    }
}

/// What a private network's processes sent, from its counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// TCP connections attempted (`ActiveOpens`, refused ones included).
    pub connects: u64,
    /// TCP connections taken by a listener there (`PassiveOpens`): the
    /// audit's, the only one.
    pub accepted: u64,
    /// UDP datagrams sent, IPv4 and IPv6 (a name looked up is one).
    pub datagrams: u64,
}

impl Traffic {
    /// What was sent between `self` and `later` that no listener of the
    /// audit's took: `(connections, datagrams)`.
    pub fn sent_elsewhere(&self, later: &Traffic) -> (u64, u64) {
        let connects = later.connects.saturating_sub(self.connects);
        let accepted = later.accepted.saturating_sub(self.accepted);
        (
            connects.saturating_sub(accepted),
            later.datagrams.saturating_sub(self.datagrams),
        )
    }

    /// Reads `/proc/net/snmp` (a `Tcp:` and a `Udp:` line of names, then
    /// one of values) and `/proc/net/snmp6` (`Udp6OutDatagrams  N`).
    fn parse(snmp: &str, snmp6: &str) -> Option<Self> {
        let field = |proto: &str, name: &str| -> Option<u64> {
            let mut rows = snmp.lines().filter(|l| l.starts_with(proto));
            let (names, values) = (rows.next()?, rows.next()?);
            let at = names.split_whitespace().position(|n| n == name)?;
            values.split_whitespace().nth(at)?.parse().ok()
        };
        let udp6 = snmp6
            .lines()
            .find_map(|l| l.strip_prefix("Udp6OutDatagrams"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        Some(Self {
            connects: field("Tcp:", "ActiveOpens")?,
            accepted: field("Tcp:", "PassiveOpens")?,
            datagrams: field("Udp:", "OutDatagrams")?.saturating_add(udp6),
        })
    }
}

/// A non-blocking packet socket of the calling thread's network namespace,
/// taking every packet at the network layer, with a receive buffer of
/// 8 MiB (forced beyond the system's ceiling where the audit may).
fn capture() -> io::Result<OwnedFd> {
    let fd = rustix::net::socket_with(
        AddressFamily::PACKET,
        SocketType::DGRAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        Some(eth::ALL),
    )?;
    const BUFFER: usize = 8 << 20;
    if rustix::net::sockopt::set_socket_recv_buffer_size_force(&fd, BUFFER).is_err() {
        rustix::net::sockopt::set_socket_recv_buffer_size(&fd, BUFFER)?;
    }
    Ok(fd)
}

fn run(ip: &str, args: &[&str]) -> io::Result<()> {
    let status = Command::new(ip)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()?;
    match status.success() {
        true => Ok(()),
        false => Err(io::Error::other(format!(
            "ip {} failed ({status})",
            args.join(" ")
        ))),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_by_name() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 2 64\n\
                    Tcp: RtoAlgorithm RtoMin ActiveOpens PassiveOpens\nTcp: 1 200 9 8\n\
                    Udp: InDatagrams NoPorts InErrors OutDatagrams\nUdp: 0 1 0 3\n\
                    UdpLite: InDatagrams NoPorts InErrors OutDatagrams\nUdpLite: 0 0 0 7\n";
        let snmp6 = "Udp6InDatagrams                 \t0\nUdp6OutDatagrams                \t2\n";
        let t = Traffic::parse(snmp, snmp6).unwrap();
        assert_eq!(
            t,
            Traffic {
                connects: 9,
                accepted: 8,
                datagrams: 5
            }
        );
        assert_eq!(Traffic::default().sent_elsewhere(&t), (1, 5));
        assert_eq!(Traffic::parse("Tcp: ActiveOpens\n", ""), None);
    }
}
