//! Typed helpers for the commands the agent uses; their output is returned as text (the
//! crate's flow-dump parser reads `dpctl/dump-flows`).

use super::error::Error;
use super::handle::{Command, Unixctl};
use crate::datapath::{parse_show, DatapathStats};
use crate::flow::DumpType;

impl Unixctl {
    /// `dpctl/dump-flows`, the datapath flows with their stats and offload state.
    pub fn dump_flows(&self) -> DumpFlows {
        DumpFlows::new(self.command("dpctl/dump-flows"))
    }

    /// `dpctl/show`, parsed: each datapath's lookup counters (hit, missed = upcalls, lost)
    /// and flow count. A reply that is not what OVS prints is [`Error::Malformed`].
    pub async fn show_datapaths(&self) -> Result<Vec<DatapathStats>, Error> {
        const COMMAND: &str = "dpctl/show";
        let text = self.command(COMMAND).execute().await?;
        parse_show(&text).map_err(|e| Error::Malformed {
            command: COMMAND.to_owned(),
            detail: e.to_string(),
        })
    }

    /// Why ovs-vswitchd cannot open the datapath a bridge of `datapath_type` needs, in its
    /// own words, or `None` when it can. A bridge whose datapath fails leaves no trace in
    /// OVSDB (only `failed to create bridge` in the log), so this asks the daemon to open
    /// that datapath again: `dpctl/show TYPE@ovs-TYPE`, the name ofproto-dpif gives the
    /// one datapath all bridges of a type share (`ofproto/ofproto-dpif.c`
    /// `open_dpif_backer`); e.g. `opening datapath system@ovs-system failed (No such file
    /// or directory)` without the kernel module. `""` is the kernel datapath, `system`.
    pub async fn datapath_open_error(&self, datapath_type: &str) -> Result<Option<String>, Error> {
        let kind = if datapath_type.is_empty() {
            "system"
        } else {
            datapath_type
        };
        match self
            .command("dpctl/show")
            .arg(datapath_backer(kind))
            .execute()
            .await
        {
            Ok(_) => Ok(None),
            Err(Error::Command { message, .. }) => Ok(Some(message)),
            Err(e) => Err(e),
        }
    }

    /// `list-commands`, parsed: what this daemon version supports.
    pub async fn list_commands(&self) -> Result<Vec<CommandInfo>, Error> {
        let text = self.command("list-commands").execute().await?;
        Ok(parse_list_commands(&text))
    }
}

/// A `dpctl/dump-flows` call being built.
#[derive(Debug)]
#[must_use = "a command does nothing until it is executed"]
pub struct DumpFlows {
    command: Command,
    more: bool,
    names: Option<bool>,
    datapath: Option<String>,
    filter: Option<String>,
    flow_type: Option<DumpType>,
}

impl DumpFlows {
    pub(crate) fn new(command: Command) -> Self {
        Self {
            command,
            more: false,
            names: None,
            datapath: None,
            filter: None,
            flow_type: None,
        }
    }

    /// `-m`: every field with its mask, the `ufid:` and `dp:` of each flow.
    pub fn more(mut self) -> Self {
        self.more = true;
        self
    }

    /// `--names`/`--no-names`: ports by name or by datapath number.
    pub fn names(mut self, names: bool) -> Self {
        self.names = Some(names);
        self
    }

    /// Which datapath (`netdev@ovs-netdev`, `system@ovs-system`); needed when both exist.
    pub fn datapath(mut self, datapath: &str) -> Self {
        self.datapath = Some(datapath.to_owned());
        self
    }

    /// `filter=...`: only flows matching this flow expression (e.g. `in_port(p0)`).
    pub fn filter(mut self, filter: &str) -> Self {
        self.filter = Some(filter.to_owned());
        self
    }

    /// `type=...`.
    pub fn flow_type(mut self, flow_type: DumpType) -> Self {
        self.flow_type = Some(flow_type);
        self
    }

    /// The arguments in `ovs-appctl`'s order: options, datapath, `filter=`, `type=`.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.more {
            args.push("-m".to_owned());
        }
        match self.names {
            Some(true) => args.push("--names".to_owned()),
            Some(false) => args.push("--no-names".to_owned()),
            None => {}
        }
        args.extend(self.datapath.clone());
        args.extend(self.filter.as_ref().map(|f| format!("filter={f}")));
        args.extend(self.flow_type.map(|t| format!("type={t}")));
        args
    }

    /// Runs it; returns the flows as text, one per line after a `flow-dump from ...` header
    /// per thread with the userspace datapath.
    pub async fn execute(self) -> Result<String, Error> {
        let args = self.to_args();
        self.command.args(args).execute().await
    }
}

/// One entry of `list-commands`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// The command name (`dpctl/dump-flows`).
    pub name: String,
    /// Its argument synopsis, possibly empty (`[-m] [--names | --no-names] [dp] ...`).
    pub usage: String,
}

/// The datapath ovs-vswitchd opens for bridges of type `kind`: `{kind}@ovs-{kind}`.
pub fn datapath_backer(kind: &str) -> String {
    format!("{kind}@ovs-{kind}")
}

/// Parses `list-commands` output: a header line, then `  NAME  USAGE` per command.
pub fn parse_list_commands(text: &str) -> Vec<CommandInfo> {
    text.lines()
        .filter(|line| line.starts_with(char::is_whitespace))
        .filter_map(|line| {
            let line = line.trim();
            let (name, usage) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            (!name.is_empty()).then(|| CommandInfo {
                name: name.to_owned(),
                usage: usage.trim().to_owned(),
            })
        })
        .collect()
}
