"""The device description that timings and benchmarks print beside every figure."""

from deblur.hardware import cpu_bf16_flags, cpu_name, free_memory, physical_memory


def test_cpu_name_carries_family_and_model(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n"
        "processor\t: 1\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n"
    )
    assert cpu_name(cpuinfo) == "AMD EPYC (family 26, model 2)"


def test_cpu_name_without_family(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some CPU\n")
    assert cpu_name(cpuinfo) == "Some CPU"


def test_cpu_flags_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse avx512f avx512_bf16 amx_tile amx_bf16\n")
    assert cpu_bf16_flags(cpuinfo) == ["amx_bf16", "avx512_bf16"]
    cpuinfo.write_text("flags\t\t: fpu sse avx2\n")
    assert cpu_bf16_flags(cpuinfo) == []
    assert cpu_bf16_flags(tmp_path / "missing") == []


def test_a_containers_memory_limit_is_the_memory_where_it_is_lower(tmp_path):
    unlimited, limited = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    unlimited.write_text("max\n")
    machine = physical_memory((unlimited,))
    assert machine and machine > 2**20
    limited.write_text(f"{2**30}\n")
    assert physical_memory((unlimited, limited, tmp_path / "absent")) == min(machine, 2**30)


def test_free_memory_is_whats_available_or_what_a_containers_limit_leaves(tmp_path):
    meminfo, limit, usage = tmp_path / "meminfo", tmp_path / "memory.max", tmp_path / "memory.current"
    meminfo.write_text("MemTotal:       8000000 kB\nMemFree:   100 kB\nMemAvailable:    4000000 kB\n")
    assert free_memory(meminfo, ()) == 4000000 * 1024
    limit.write_text("max\n")
    usage.write_text(f"{2**20}\n")
    assert free_memory(meminfo, ((limit, usage),)) == 4000000 * 1024  # no limit
    limit.write_text(f"{2**30}\n")
    assert free_memory(meminfo, ((limit, usage),)) == 2**30 - 2**20
    assert free_memory(tmp_path / "absent", ((limit, tmp_path / "absent"),)) is None
