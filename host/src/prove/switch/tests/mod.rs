use super::*;

fn args(require: ForwardingLevel) -> SwitchParams {
    SwitchParams {
        interface: "ens1f0np0".to_owned(),
        peer: Ipv4Addr::new(192, 0, 2, 20),
        representor: "pf0hpf".to_owned(),
        packets: 400,
        require,
        idle: Duration::from_secs(1),
        trials: 1,
        far_end: None,
        witnesses: 1,
    }
}

/// An observation of `dpu` alone.
fn seen(dpu: &Snapshot) -> Observation {
    Observation {
        host: Snapshot {
            samples: Vec::new(),
            ..dpu.clone()
        },
        dpu: dpu.clone(),
        far_end: None,
    }
}

#[test]
fn a_representor_with_cpu_hit_is_held_to_the_first_packets() {
    let mut dpu = Snapshot {
        taken_at: SystemTime::UNIX_EPOCH,
        monotonic_start: Duration::ZERO,
        monotonic_end: Duration::ZERO,
        boot_id: None,
        samples: Vec::new(),
        errors: Vec::new(),
        read: dpu_probe::snapshot::ReadReport::default(),
    };
    let names = |list: &[Expectation]| list.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
    // The lab: no mlx5 representor, TC required: level lines and the upcall lines.
    assert_eq!(
        expectations(&args(ForwardingLevel::TcSoftware), 400, &seen(&dpu)).len(),
        5
    );
    dpu.samples.push(Sample::cumulative(
        Source::NetdevOffload,
        "netdevs/pf0hpf",
        CPU_HIT,
        10,
        Unit::Packets,
    ));
    let list = expectations(&args(ForwardingLevel::Hardware), 400, &seen(&dpu));
    let cpu = list
        .iter()
        .find(|e| e.select.source == Source::NetdevOffload)
        .unwrap_or_else(|| panic!("no cpu_hit line: {:?}", names(&list)));
    assert_eq!(cpu.rule, Rule::AtMost(FIRST_PACKETS));
    // Hardware required: TC in software and the datapath are the slower paths.
    let slower = list
        .iter()
        .find(|e| e.name.starts_with("slower"))
        .expect("slower");
    assert_eq!(slower.select.objects.len(), 2);
}

#[test]
fn levels_are_ordered_and_read_from_the_agents_placement() {
    assert!(ForwardingLevel::Hardware > ForwardingLevel::TcSoftware);
    assert!(ForwardingLevel::TcSoftware > ForwardingLevel::Datapath);
    let placed = v1::TrafficByLevel {
        hardware: 1,
        tc_software: 2,
        datapath: 3,
        unattributed: 4,
    };
    let read: Vec<u64> = ForwardingLevel::ALL.iter().map(|l| l.of(&placed)).collect();
    assert_eq!(read, [1, 2, 3]);
}

mod judge;
