"""The jars that give local Spark Apache Iceberg, from PyPI packages alone (no Maven here; EMR brings its own Iceberg).

- Iceberg's Spark runtime (``iceberg-spark-runtime-3.5_2.12``) comes out of the wheel ``snowpark-connect-deps-iceberg``.
- As shipped there it lacks the copy of Jackson that Iceberg relocates to ``org.apache.iceberg.shaded.com.fasterxml
  .jackson`` (NoClassDefFoundError: .../JsonFactoryBuilder at the first table). This script writes that copy from
  pyspark's own Jackson jars: every class's names in its constant pool, and the service files, are moved to the
  relocated package, as Maven's shade plugin does; nothing else in a class changes.
- Iceberg's Glue catalog needs the AWS SDK v2, which that runtime does not bundle, and no PyPI package pairs Iceberg
  1.10 with it. ``--glue-jar`` takes the jar of the sdist ``sagemaker-feature-store-pyspark==2.2.2``, which bundles
  Iceberg 1.9.0 with its AWS module and the SDK, all relocated under ``smfs.shaded``, and writes ``GLUE_RUNTIME``:
  Iceberg's own classes moved back to ``org.apache.iceberg`` (where Spark's settings name them; the SDK stays where
  it is) and Spark's data source registration added. It replaces the two jars above in a JVM, never joins them.

    python workload/local/iceberg_jars.py --wheel <snowpark_connect_deps_iceberg-*.whl> --output .cache/jars
    python workload/local/iceberg_jars.py --glue-jar <sagemaker-feature-store-spark-sdk-3.5.jar> --output .cache/jars
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
GLUE_RUNTIME = "iceberg-glue-runtime-1.9.0.jar"
JACKSON_MOVES = ((PACKAGE, RELOCATED),)
# Iceberg back where Spark's settings name it; and the Apache Commons packages its shading points at but left out,
# to Spark's own copies of them (the SDK and what the jar holds stay under smfs.shaded)
GLUE_MOVES = ((b"smfs/shaded/org/apache/iceberg/", b"org/apache/iceberg/"),
              *((b"smfs/shaded/org/apache/commons/%s/" % name, b"org/apache/commons/%s/" % name)
                for name in (b"lang3", b"lang", b"compress", b"pool", b"io")))
GLUE_CATALOG = "org/apache/iceberg/aws/glue/GlueCatalog.class"
# what the shade plugin would have written from Iceberg's own jars: Spark finds the `iceberg` data source by it
SERVICES = {"META-INF/services/org.apache.spark.sql.sources.DataSourceRegister":
            b"org.apache.iceberg.spark.source.IcebergSource\n"}
FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the same bytes at every build

# constant pool tags -> the bytes that follow the tag (Utf8 is read by its length; Long and Double take two slots)
_SIZES = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2}
_UTF8 = 1


def relocate_class(data: bytes, moves: tuple[tuple[bytes, bytes], ...] = JACKSON_MOVES) -> bytes:
    """A class file with every constant-pool text that names a package of ``moves`` (internal names, descriptors and
    signatures, dotted names in strings) pointing at its new place; the pool's indices stay as they were."""
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    count = struct.unpack_from(">H", data, 8)[0]
    out, position, index = [data[:10]], 10, 1
    while index < count:
        tag = data[position]
        if tag == _UTF8:
            length = struct.unpack_from(">H", data, position + 1)[0]
            text = relocate_text(data[position + 3:position + 3 + length], moves)
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


def relocate_text(text: bytes, moves: tuple[tuple[bytes, bytes], ...] = JACKSON_MOVES) -> bytes:
    for package, relocated in moves:
        text = text.replace(package, relocated).replace(package.replace(b"/", b"."), relocated.replace(b"/", b"."))
    return text


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


def write_glue_runtime(source: Path, output: Path) -> int:
    """Writes ``source`` (sagemaker-feature-store-pyspark's jar) to ``output`` with Iceberg's classes, and the texts
    that name them (class files, service files, properties), moved by GLUE_MOVES, and Spark's data source registration
    added; returns how many entries it holds."""
    written = 0
    partial = output.with_suffix(".partial")
    with zipfile.ZipFile(source) as read, zipfile.ZipFile(partial, "w") as jar:  # stored: the JVM maps it, 14 s
        if "smfs/shaded/" + GLUE_CATALOG not in read.namelist():
            raise SystemExit(f"{source} holds no Iceberg Glue catalog under smfs.shaded: extract deps/jars/"
                             "sagemaker-feature-store-spark-sdk-3.5.jar from sagemaker-feature-store-pyspark==2.2.2")
        for info in read.infolist():
            if info.is_dir() or info.filename in SERVICES:
                continue
            data = read.read(info)
            if info.filename.endswith(".class") and any(  # most classes (the SDK's) name no moved package
                    package in data or package.replace(b"/", b".") in data for package, _ in GLUE_MOVES):
                data = relocate_class(data, GLUE_MOVES)
            elif info.filename.startswith("META-INF/services/") or info.filename.endswith(".properties"):
                data = relocate_text(data, GLUE_MOVES)
            name = relocate_text(info.filename.encode(), GLUE_MOVES).decode()
            jar.writestr(zipfile.ZipInfo(name, FIXED_TIME), data)
            written += 1
        for name, data in SERVICES.items():
            jar.writestr(zipfile.ZipInfo(name, FIXED_TIME), data)
            written += 1
    os.replace(partial, output)
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
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--wheel", type=Path, help="snowpark_connect_deps_iceberg-1.0.3-*.whl")
    given.add_argument("--glue-jar", type=Path, help="sagemaker-feature-store-spark-sdk-3.5.jar, from the sdist of "
                       "sagemaker-feature-store-pyspark==2.2.2")
    parser.add_argument("--output", type=Path, required=True, help="the folder of the jars")
    args = parser.parse_args(argv)
    if args.glue_jar:
        if not zipfile.is_zipfile(args.glue_jar):
            parser.error(f"--glue-jar {args.glue_jar} is not a jar: extract deps/jars/sagemaker-feature-store-spark-"
                         "sdk-3.5.jar from the sdist of sagemaker-feature-store-pyspark==2.2.2 (make test does)")
        args.output.mkdir(parents=True, exist_ok=True)
        count = write_glue_runtime(args.glue_jar, args.output / GLUE_RUNTIME)
        print(f"{args.output / GLUE_RUNTIME} ({count} entries)", file=sys.stderr)
        return 0
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
