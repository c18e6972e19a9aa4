//! Bad input rows of the Inventory service: getters and page tokens.

use dpu_proto::v1;

use super::values::*;
use super::Req;

pub(super) fn rows(add: &mut impl FnMut(&'static str, &str, String, Req)) {
    // ---- Inventory getters and page tokens.
    // RDMA device names may start with a digit: "1abc" is a fine ibdev.
    for name in bad_flat_names("rdmaDevices", "netdevs")
        .into_iter()
        .filter(|n| !n.ends_with("/1abc"))
        .chain([
            "rdmaDevices/mlx5_0/ports".to_owned(),
            format!("rdmaDevices/{}", long(64)),
        ])
    {
        add(
            "GetRdmaDevice",
            "name",
            name.clone(),
            Req::GetRdmaDevice(v1::GetRdmaDeviceRequest { name }),
        );
    }
    for name in [
        "",
        "netdevs",
        "netdevs/",
        "rdmaDevices/mlx5_0",
        "netdevs/a/b",
    ] {
        add(
            "GetNetdev",
            "name",
            name.to_owned(),
            Req::GetNetdev(v1::GetNetdevRequest {
                name: name.to_owned(),
            }),
        );
    }
    let page = Some(v1::PageRequest {
        page_size: 1,
        page_token: "../../etc/passwd".to_owned(),
    });
    add(
        "ListNetdevs",
        "page.page_token",
        "unissued token".into(),
        Req::ListNetdevs(v1::ListNetdevsRequest {
            page: page.clone(),
            representors_only: false,
        }),
    );
    add(
        "ListRdmaDevices",
        "page.page_token",
        "unissued token".into(),
        Req::ListRdmaDevices(v1::ListRdmaDevicesRequest { page }),
    );
}
