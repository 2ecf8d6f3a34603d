"""Device and dtype resolution, tested on the CPU by simulating what CUDA and MPS would report."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from support.helpers import expect_error, make_runner

from embedcli.cli import app
from embedcli.core import devices, memory
from embedcli.errors import DeviceError, MemoryLimitError


@pytest.fixture
def no_accelerators(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devices, "_mps_available", lambda: False)


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda i: SimpleNamespace(name=f"Fake GPU {i}", major=7, minor=5),
    )
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda i=None: (3 * 2**30, 16 * 2**30))


def test_cpu_and_meta(no_accelerators) -> None:
    assert devices.resolve_device("cpu") == torch.device("cpu")
    assert devices.resolve_device(" CPU ") == torch.device("cpu")
    assert devices.resolve_device("meta") == torch.device("meta")


def test_auto_falls_back_to_cpu(no_accelerators) -> None:
    assert devices.resolve_device("auto") == torch.device("cpu")


def test_auto_prefers_cuda_then_mps(monkeypatch: pytest.MonkeyPatch, two_gpus) -> None:
    assert devices.resolve_device("auto") == torch.device("cuda", 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devices, "_mps_available", lambda: True)
    assert devices.resolve_device("auto") == torch.device("mps")


def test_cuda_index(two_gpus) -> None:
    assert devices.resolve_device("cuda") == torch.device("cuda", 0)
    assert devices.resolve_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(
        DeviceError,
        match=r"cuda:2 was requested, but this machine has 2 CUDA device\(s\): cuda:0 to cuda:1",
    ):
        devices.resolve_device("cuda:2")


def test_cuda_missing_from_the_build(no_accelerators, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch, "__version__", "2.13.0+cpu")
    with pytest.raises(DeviceError) as info:
        devices.resolve_device("cuda")
    assert str(info.value) == (
        "CUDA was requested, but this torch build (2.13.0+cpu) has no CUDA; try --device cpu"
    )


def test_cuda_build_without_gpu(no_accelerators, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    with pytest.raises(
        DeviceError, match="has CUDA and sees no GPU on this machine; try --device cpu"
    ):
        devices.resolve_device("cuda:0")


def test_mps_unavailable(no_accelerators, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices, "_mps_built", lambda: False)
    with pytest.raises(
        DeviceError, match=r"MPS was requested, but this torch build .* has no MPS support"
    ):
        devices.resolve_device("mps")
    monkeypatch.setattr(devices, "_mps_built", lambda: True)
    monkeypatch.setattr(devices.platform, "system", lambda: "Linux")
    with pytest.raises(DeviceError, match="MPS needs an Apple-silicon Mac"):
        devices.resolve_device("mps")


@pytest.mark.parametrize("spec", ["tpu", "cuda:x", "cpu:1", "mps:0", "", "cuda:-1"])
def test_unknown_devices(spec: str) -> None:
    with pytest.raises(DeviceError, match=f"unknown device '{spec}'"):
        devices.resolve_device(spec)


def test_meta_refused_where_values_are_needed() -> None:
    with pytest.raises(DeviceError, match="meta device holds shapes but no values"):
        devices.resolve_device("meta", allow_meta=False)


@pytest.mark.parametrize(
    ("name", "canonical", "size"),
    [
        ("float32", "float32", 4),
        ("fp32", "float32", 4),
        ("torch.float16", "float16", 2),
        ("half", "float16", 2),
        ("BF16", "bfloat16", 2),
        ("bfloat16", "bfloat16", 2),
    ],
)
def test_dtype_aliases(name: str, canonical: str, size: int) -> None:
    assert devices.canonical_dtype(name) == canonical
    assert devices.torch_dtype(name) == getattr(torch, canonical)
    assert devices.dtype_size(name) == size == getattr(torch, canonical).itemsize


@pytest.mark.parametrize("name", ["int8", "float64", "float8"])
def test_unknown_dtypes(name: str) -> None:
    with pytest.raises(
        DeviceError, match=f"unknown dtype '{name}'; choose one of: float32, float16, bfloat16"
    ):
        devices.canonical_dtype(name)


def test_cuda_accepts_every_dtype(two_gpus) -> None:
    for dtype in ("float32", "float16", "bfloat16"):
        devices.check_dtype_on_device(dtype, torch.device("cuda", 0))


def test_bfloat16_on_mps_needs_macos_14(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices.platform, "mac_ver", lambda: ("13.6", ("", "", ""), "arm64"))
    with pytest.raises(DeviceError, match="macOS 14"):
        devices.check_dtype_on_device("bfloat16", torch.device("mps"))
    monkeypatch.setattr(devices.platform, "mac_ver", lambda: ("14.2", ("", "", ""), "arm64"))
    devices.check_dtype_on_device("bfloat16", torch.device("mps"))


def test_available_memory(two_gpus) -> None:
    assert memory.available_memory(torch.device("cuda", 1)) == 3 * 2**30
    assert memory.available_memory(torch.device("meta")) is None
    host = memory.available_memory(torch.device("cpu"))
    assert host is not None and host > 0


def test_ensure_fits() -> None:
    memory.ensure_fits("tables", 10, 10, "cpu", "hint")
    memory.ensure_fits("tables", 10, None, "cpu", "hint")
    with pytest.raises(
        MemoryLimitError,
        match=r"tables need 2\.0 KiB, but only 1\.0 KiB is available on cuda:0; hint",
    ):
        memory.ensure_fits("tables", 2048, 1024, "cuda:0", "hint")


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (3 * 2**30, "3.0 GiB"),
        (2**70, "1048576.0 PiB"),
    ],
)
def test_format_bytes(n: int, text: str) -> None:
    assert memory.format_bytes(n) == text


def test_list_devices_without_accelerators(
    no_accelerators, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.version, "cuda", None)
    rows = devices.list_devices()
    assert [r.name for r in rows] == ["cpu", "cuda", "mps"]
    assert [r.available for r in rows] == [True, False, False]
    assert "has no CUDA" in rows[1].description


def test_list_devices_with_two_gpus(two_gpus, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices, "_mps_available", lambda: False)
    rows = devices.list_devices()
    assert [r.name for r in rows] == ["cpu", "cuda:0", "cuda:1", "mps"]
    assert rows[2].description == "Fake GPU 1 (compute capability 7.5)"
    assert rows[2].memory_total == 16 * 2**30 and rows[2].memory_free == 3 * 2**30


def test_free_memory_honours_an_address_space_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    from embedcli.core import memory

    with open("/proc/self/status", encoding="ascii") as status:
        held = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    limit = held + 300 * 2**20  # 300 MiB left under the limit
    monkeypatch.setattr(resource, "getrlimit", lambda which: (limit, resource.RLIM_INFINITY))
    found = memory.host_available_memory()
    assert found is not None and found <= 300 * 2**20
    assert found > 250 * 2**20  # what this test allocates between the two reads is small


runner = make_runner()


@pytest.mark.parametrize("name", ["gpu", "GPU", "gpu:0", "nvidia", "metal"])
def test_device_gpu_says_what_torch_calls_it(name: str) -> None:
    result = runner.invoke(app, ["embed", "hi", "--device", name])
    expect_error(result, "is not a device name: torch names", code=2)
    assert "did you mean 'cpu'" not in result.stderr
    assert ("mps" if name == "metal" else "cuda") in result.stderr
