"""`embedcli devices`: what --device can be on this machine."""

from embedcli.cli import options as o
from embedcli.cli.output import emit
from embedcli.core.devices import machine_devices
from embedcli.render.json import devices_json


def devices(as_json: o.AsJson = False, quiet: o.Quiet = False) -> None:
    """List cpu, cuda:N and mps: availability, names, memory, and what --device auto picks.

    \b
      embedcli devices
      embedcli devices --json | jq -r .auto
    """

    emit(as_json, devices_json, "devices_table", *machine_devices())
