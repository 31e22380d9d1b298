"""The dynamic section of an ELF64 little-endian file: the libraries it needs and where
it looks for them. No readelf on a bare GPU node: the format is read directly (the ELF
specification; <elf.h> names the constants)."""

import struct

DT_NEEDED, DT_STRTAB, DT_RPATH, DT_SONAME, DT_RUNPATH = 1, 5, 15, 14, 29
PT_LOAD, PT_DYNAMIC = 1, 2


class NotElf(ValueError):
    pass


def dynamic_entries(path):
    """{tag: [values]} of the file's dynamic section, strings resolved for DT_NEEDED,
    DT_SONAME, DT_RPATH and DT_RUNPATH; {} for a static file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise NotElf(f"{path}: not a 64-bit little-endian ELF file")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for i in range(phnum):
        p_type, _flags, offset, vaddr, _paddr, filesz, _memsz, _align = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type == PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (offset, filesz)
    if dynamic is None:
        return {}

    def file_offset(address):
        for vaddr, offset, filesz in loads:
            if vaddr <= address < vaddr + filesz:
                return offset + address - vaddr
        raise NotElf(f"{path}: address {address:#x} outside every loaded segment")

    raw = []
    for at in range(dynamic[0], dynamic[0] + dynamic[1], 16):
        tag, value = struct.unpack_from("<qQ", data, at)
        if tag == 0:
            break
        raw.append((tag, value))
    strtab = next((file_offset(v) for t, v in raw if t == DT_STRTAB), None)

    def string(offset):
        end = data.index(b"\0", strtab + offset)
        return data[strtab + offset:end].decode()

    entries = {}
    for tag, value in raw:
        if tag in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH) and strtab is not None:
            entries.setdefault(tag, []).append(string(value))
    return entries


def needed(path):
    return dynamic_entries(path).get(DT_NEEDED, [])


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"
