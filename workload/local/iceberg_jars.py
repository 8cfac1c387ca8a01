"""The jars that give local Spark Apache Iceberg, from PyPI packages alone (no Maven here; EMR brings its own Iceberg).

- Iceberg's Spark runtime (``iceberg-spark-runtime-3.5_2.12``) comes out of the wheel ``snowpark-connect-deps-iceberg``.
- As shipped there it lacks the copy of Jackson that Iceberg relocates to ``org.apache.iceberg.shaded.com.fasterxml
  .jackson`` (NoClassDefFoundError: .../JsonFactoryBuilder at the first table). This script writes that copy from
  pyspark's own Jackson jars: every class's names in its constant pool, and the service files, are moved to the
  relocated package, as Maven's shade plugin does; nothing else in a class changes.

    python workload/local/iceberg_jars.py --wheel <snowpark_connect_deps_iceberg-*.whl> --output .cache/jars
"""
from __future__ import annotations

import argparse
import os
import struct
import sys
import zipfile
from pathlib import Path

RUNTIME = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
JACKSON_VERSION = "2.15.2"  # pyspark 3.5's
JACKSON = ("jackson-annotations", "jackson-core", "jackson-databind", "jackson-datatype-jsr310")
JACKSON_JAR = f"iceberg-jackson-{JACKSON_VERSION}.jar"
PACKAGE, RELOCATED = b"com/fasterxml/jackson/", b"org/apache/iceberg/shaded/com/fasterxml/jackson/"
DOTTED_PACKAGE, DOTTED_RELOCATED = PACKAGE.replace(b"/", b"."), RELOCATED.replace(b"/", b".")
FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the same bytes at every build

# constant pool tags -> the bytes that follow the tag (Utf8 is read by its length; Long and Double take two slots)
_SIZES = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2}
_UTF8 = 1


def relocate_class(data: bytes) -> bytes:
    """A class file with every constant-pool text that names Jackson's package (internal names, descriptors and
    signatures, dotted names in strings) pointing at the relocated package; the pool's indices stay as they were."""
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    count = struct.unpack_from(">H", data, 8)[0]
    out, position, index = [data[:10]], 10, 1
    while index < count:
        tag = data[position]
        if tag == _UTF8:
            length = struct.unpack_from(">H", data, position + 1)[0]
            text = relocate_text(data[position + 3:position + 3 + length])
            out.append(bytes([_UTF8]) + struct.pack(">H", len(text)) + text)
            position += 3 + length
        else:
            size = _SIZES[tag]
            out.append(data[position:position + 1 + size])
            position += 1 + size
            index += 1 if tag in (5, 6) else 0
        index += 1
    out.append(data[position:])
    return b"".join(out)


def relocate_text(text: bytes) -> bytes:
    return text.replace(PACKAGE, RELOCATED).replace(DOTTED_PACKAGE, DOTTED_RELOCATED)


def relocated_name(name: str) -> str | None:
    """Where an entry of a Jackson jar goes in the relocated jar; None for one left out (other Java versions' classes,
    manifests, licences: Iceberg's own jar carries the licences of what it relocates)."""
    if name.endswith(".class") and name.startswith(PACKAGE.decode()):
        return RELOCATED.decode() + name[len(PACKAGE):]
    services = "META-INF/services/"
    if name.startswith(services + PACKAGE.decode().replace("/", ".")):
        return services + relocate_text(name[len(services):].encode()).decode()
    return None


def write_relocated_jackson(jackson_jars: list[str], output: Path) -> int:
    """Writes the relocated Jackson of ``jackson_jars`` to ``output``; returns how many entries it holds."""
    written = 0
    partial = output.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
        for source in jackson_jars:
            with zipfile.ZipFile(source) as read:
                for name in sorted(read.namelist()):
                    target = relocated_name(name)
                    if target is None:
                        continue
                    data = read.read(name)
                    data = relocate_class(data) if name.endswith(".class") else relocate_text(data)
                    jar.writestr(zipfile.ZipInfo(target, FIXED_TIME), data)
                    written += 1
    os.replace(partial, output)  # whole or not there
    return written


def pyspark_jackson_jars() -> list[str]:
    import pyspark

    folder = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    jars = [os.path.join(folder, f"{name}-{JACKSON_VERSION}.jar") for name in JACKSON]
    missing = [os.path.basename(jar) for jar in jars if not os.path.isfile(jar)]
    if missing:
        raise SystemExit(f"pyspark's jars in {folder} lack {', '.join(missing)}: install the pinned pyspark "
                         "(requirements.lock)")
    return jars


def local_catalog_settings(work: str) -> dict[str, str]:
    """The Spark settings of a bare local session that keeps Iceberg tables beside Parquet ones in an embedded Hive
    catalog under ``work``: the sync's own (iceberg_tables.LOCAL_SESSION_SETTINGS) and the metastore's place."""
    from segment_lake.iceberg_tables import LOCAL_SESSION_SETTINGS

    return {**LOCAL_SESSION_SETTINGS, "spark.sql.warehouse.dir": f"{work}/warehouse",
            "spark.sql.catalogImplementation": "hive",
            "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={work}/metastore_db;create=true"}


def extract_runtime(wheel: Path, output: Path) -> None:
    with zipfile.ZipFile(wheel) as read:
        members = [name for name in read.namelist() if name.endswith("/" + RUNTIME)]
        if not members:
            raise SystemExit(f"{wheel} holds no {RUNTIME}: download snowpark-connect-deps-iceberg==1.0.3")
        partial = output.with_suffix(".partial")
        partial.write_bytes(read.read(members[0]))
        os.replace(partial, output)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, required=True, help="snowpark_connect_deps_iceberg-1.0.3-*.whl")
    parser.add_argument("--output", type=Path, required=True, help="the folder of the jars")
    args = parser.parse_args(argv)
    if not zipfile.is_zipfile(args.wheel):
        parser.error(f"--wheel {args.wheel} is not a wheel: download it with pip download --no-deps "
                     "snowpark-connect-deps-iceberg==1.0.3 (make setup does)")
    args.output.mkdir(parents=True, exist_ok=True)
    extract_runtime(args.wheel, args.output / RUNTIME)
    count = write_relocated_jackson(pyspark_jackson_jars(), args.output / JACKSON_JAR)
    print(f"{args.output / RUNTIME}; {args.output / JACKSON_JAR} ({count} entries)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
