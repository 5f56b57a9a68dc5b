//! The replicas' network: each replica in a network namespace of its own, joined to the host's
//! (where PostgreSQL's and the upstream's endpoints are) by a veth pair on a bridge the run
//! creates, with addresses inside a subnet of its own. Partitions, half-open links and resets
//! are `iptables` rules inside a replica's namespace; healing flushes them. Everything is
//! removed when the value is dropped. Needs root (`CAP_NET_ADMIN`); [`Net::create`] says why
//! it could not.

use std::net::Ipv4Addr;
use std::process::Command;

#[derive(Debug)]
pub struct Net {
    tag: String,
    subnet: [u8; 3],
    pub namespaces: Vec<String>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    run("ip", args)
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program).args(args).output().map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{program} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Which packets of a replica's connections to a service port a fault drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Both ways.
    Both,
    /// The service's answers only: requests arrive and run, the replica never hears back.
    Answers,
    /// Each request has this chance in a thousand of arriving and having its connection reset
    /// before the answer, on both sides (the harness's forwarder does it: an `iptables` reset of
    /// the answer reaches only the far side, and a replica waiting on that socket never hears —
    /// it has no keepalive or read deadline; see the closing note of the nemesis issue).
    Resets(u32),
}

impl Net {
    /// Creates the bridge and `n` namespaces with their veth pairs.
    pub fn create(n: usize) -> Result<Net, String> {
        let id = std::process::id();
        let tag = format!("sn{}", id % 100_000);
        let subnet = [10, 213, (20 + id % 200) as u8];
        let net = Net { tag, subnet, namespaces: Vec::new() };
        let br = net.bridge();
        ip(&["link", "add", &br, "type", "bridge"])?;
        let mut net = net;
        ip(&["addr", "add", &format!("{}/24", net.host()), "dev", &br])?;
        ip(&["link", "set", &br, "up"])?;
        for i in 0..n {
            let ns = format!("{}r{}", net.tag, i + 1);
            ip(&["netns", "add", &ns])?;
            net.namespaces.push(ns.clone());
            let veth = format!("{}v{}", net.tag, i + 1);
            ip(&["link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns])?;
            ip(&["link", "set", &veth, "master", &br])?;
            ip(&["link", "set", &veth, "up"])?;
            let inside = |args: &[&str]| {
                let mut all = vec!["netns", "exec", ns.as_str(), "ip"];
                all.extend_from_slice(args);
                ip(&all)
            };
            inside(&["addr", "add", &format!("{}/24", net.replica(i)), "dev", "eth0"])?;
            inside(&["link", "set", "eth0", "up"])?;
            inside(&["link", "set", "lo", "up"])?;
        }
        Ok(net)
    }

    fn bridge(&self) -> String {
        format!("{}br", self.tag)
    }

    /// The host's address on the bridge (where the services listen).
    pub fn host(&self) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, 1)
    }

    /// Replica `i`'s address in its namespace.
    pub fn replica(&self, i: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, 11 + i as u8)
    }

    /// The command prefix that runs a program in replica `i`'s namespace.
    pub fn wrapper(&self, i: usize) -> Vec<String> {
        vec!["ip".into(), "netns".into(), "exec".into(), self.namespaces[i].clone()]
    }

    fn iptables(&self, i: usize, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["netns", "exec", self.namespaces[i].as_str(), "iptables"];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// Cuts replica `i`'s connections to the host's `port` as `cut` says.
    pub fn cut(&self, i: usize, port: u16, cut: Cut) -> Result<(), String> {
        let host = self.host().to_string();
        let port = port.to_string();
        let answers = ["-A", "INPUT", "-s", &host, "-p", "tcp", "--sport", &port];
        match cut {
            Cut::Both => {
                self.iptables(i, &[&answers[..], &["-j", "DROP"]].concat())?;
                self.iptables(i, &["-A", "OUTPUT", "-d", &host, "-p", "tcp", "--dport", &port, "-j", "DROP"])
            }
            Cut::Answers => self.iptables(i, &[&answers[..], &["-j", "DROP"]].concat()),
            Cut::Resets(_) => Err("resets are the forwarder's (Link), not iptables'".into()),
        }
    }

    /// Removes every rule in replica `i`'s namespace.
    pub fn heal(&self, i: usize) -> Result<(), String> {
        self.iptables(i, &["-F"])
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["link", "del", &self.bridge()]);
    }
}
