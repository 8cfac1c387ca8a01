// The embedded catalog's tables, read and registered in batches: one metastore call reads every
// table of a run, tables are created through Spark's Hive catalog (which records the schema as
// Spark reads it) and partitions go straight to the metastore client, one call per table; no SQL
// is parsed. (Through SQL and py4j, a table cost about 400 ms; through the session catalog, 60 ms.)
// Compiled at run time by Janino: Java 7 syntax.
package segmentlake;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.ql.metadata.Hive;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.CatalogTableType;
import org.apache.spark.sql.catalyst.catalog.CatalogUtils;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalog;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.hive.HiveExternalCatalog;
import org.apache.spark.sql.hive.client.HiveClientImpl;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.JavaConverters;
import scala.collection.Seq;
import scala.runtime.AbstractFunction0;

public class HiveTables {
    static final ObjectMapper JSON = new ObjectMapper();
    // what CREATE EXTERNAL TABLE ... STORED AS PARQUET records
    static final String INPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat";
    static final String OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat";
    static final String SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe";

    /** {table: {columns: [[column, type], ...], location} or null when missing} for the tables of ``tablesJson``
     *  (a list), read in one metastore call. */
    public static String describe(SparkSession spark, String database, String tablesJson) throws Exception {
        List names = (List) JSON.readValue(tablesJson, List.class);
        Map result = new LinkedHashMap();
        for (int i = 0; i < names.size(); i++) result.put(names.get(i), null);
        Map found = existing(spark.sessionState().catalog(), database, names);
        for (Iterator tables = found.values().iterator(); tables.hasNext();) {
            CatalogTable table = (CatalogTable) tables.next();
            List columns = new ArrayList();
            StructField[] fields = table.dataSchema().fields();
            for (int i = 0; i < fields.length; i++) {
                List column = new ArrayList();
                column.add(fields[i].name());
                column.add(fields[i].dataType().catalogString());
                columns.add(column);
            }
            Map info = new LinkedHashMap();
            info.put("columns", columns);
            info.put("location", table.location().toString());
            info.put("created", String.valueOf(table.createTime()));
            // an Iceberg table's partition keys are among its columns (catalog/local.py takes them out)
            info.put("iceberg", Boolean.valueOf(table.properties().contains("table_type")
                    && "ICEBERG".equalsIgnoreCase((String) table.properties().apply("table_type"))));
            result.put(table.identifier().table(), info);
        }
        return JSON.writeValueAsString(result);
    }

    /** Applies ``changesJson``, [{table, columns: [[name, type]], keys: [key], partitions: [[value]],
     *  location, format, partition_locations}]: creates a missing table (a Hive Parquet table, or for format
     *  json a Spark JSON table: there is no Hive JSON serde here), appends the columns a table lacks, in
     *  order, and adds the partitions it lacks (at ``key=value/...`` below the location, unless
     *  ``partition_locations`` names each one's). */
    public static void register(SparkSession spark, final String database, String changesJson) throws Exception {
        List changes = (List) JSON.readValue(changesJson, List.class);
        SessionCatalog catalog = spark.sessionState().catalog();
        HiveExternalCatalog external = (HiveExternalCatalog) spark.sharedState().externalCatalog().unwrapped();
        final HiveClientImpl client = (HiveClientImpl) external.client();
        List names = new ArrayList();
        for (int i = 0; i < changes.size(); i++) names.add(((Map) changes.get(i)).get("table"));
        Map found = existing(catalog, database, names);
        final List partitions = new ArrayList();  // per table, added in one metastore session below
        for (int i = 0; i < changes.size(); i++) {
            Map change = (Map) changes.get(i);
            String name = (String) change.get("table");
            String location = ((String) change.get("location")).replaceAll("/+$", "");
            List keys = (List) change.get("keys");
            TableIdentifier id = new TableIdentifier(name, Option.apply(database));
            CatalogTable table = (CatalogTable) found.get(name);
            if (table == null) {
                table = newTable(id, (List) change.get("columns"), keys, location, (String) change.get("format"),
                                 spark.version());
                external.createTable(table, false);  // with the properties Spark reads the schema from
            } else {
                StructType data = table.dataSchema();
                StructType appended = withColumns(data, (List) change.get("columns"));
                if (appended.size() > data.size()) {
                    catalog.alterTableDataSchema(id, appended);
                    table = external.getTable(database, name);  // its partitions take the new column list
                }
            }
            StorageDescriptor format = HiveClientImpl.toHiveTable(table, Option.empty()).getTTable().getSd();
            List values = (List) change.get("partitions");
            List locations = (List) change.get("partition_locations");
            int now = (int) (System.currentTimeMillis() / 1000);
            List added = new ArrayList();
            for (int p = 0; p < values.size(); p++) {
                List partition = (List) values.get(p);
                StringBuilder path = new StringBuilder(location);
                for (int k = 0; k < keys.size(); k++) path.append('/').append(keys.get(k)).append('=').append(partition.get(k));
                String at = locations.isEmpty() ? path.toString() : (String) locations.get(p);
                StorageDescriptor storage = new StorageDescriptor(format);  // the table's format and serde
                storage.setLocation(CatalogUtils.URIToString(CatalogUtils.stringToURI(at)));  // as Spark does
                added.add(new Partition(partition, database, name, now, 0, storage, new HashMap()));
            }
            if (!added.isEmpty()) partitions.add(added);
        }
        // A partition this run wrote that existed already takes the table's column list: Hive's SerDe (and Spark
        // with convertMetastoreParquet=false) reads a partition through its own list, and would read a column a
        // later run added to its files as NULL.
        // Straight to the metastore client, in the Hive state Spark's own calls set up: through the session
        // catalog, every table's partitions also cost a database check and two reads of the table.
        client.withHiveState(new AbstractFunction0() {
            public Object apply() {
                try {
                    for (int i = 0; i < partitions.size(); i++) {
                        List wanted = (List) partitions.get(i);
                        List added = Hive.get().getMSC().add_partitions(wanted, true, true);  // the missing ones
                        Set fresh = new HashSet();
                        for (int p = 0; p < added.size(); p++) fresh.add(((Partition) added.get(p)).getValues());
                        List stale = new ArrayList();
                        for (int p = 0; p < wanted.size(); p++) {
                            Partition want = (Partition) wanted.get(p);
                            if (fresh.contains(want.getValues())) continue;
                            Partition held = Hive.get().getMSC().getPartition(database, want.getTableName(), want.getValues());
                            if (held.getSd().getCols().equals(want.getSd().getCols())) continue;
                            held.getSd().setCols(want.getSd().getCols());
                            stale.add(held);
                        }
                        if (!stale.isEmpty()) {
                            Hive.get().getMSC().alter_partitions(database, ((Partition) wanted.get(0)).getTableName(), stale);
                        }
                    }
                } catch (Exception error) {
                    throw new RuntimeException(error);
                }
                return null;
            }
        });
        for (int i = 0; i < names.size(); i++) {  // a query in this session sees the new columns and partitions
            catalog.invalidateCachedTable(new TableIdentifier((String) names.get(i), Option.apply(database)));
        }
    }

    /** Every partition of ``database``.``name`` as JSON, [[[value, ...], location], ...] (values in key order): one
     *  call, where reading them through py4j took a round trip per partition and value. */
    public static String partitionLocations(SparkSession spark, String database, String name) throws Exception {
        ExternalCatalog external = spark.sharedState().externalCatalog();
        Seq keys = external.getTable(database, name).partitionColumnNames();
        List result = new ArrayList();
        Iterator listed = JavaConverters.seqAsJavaList(external.listPartitions(database, name, Option.empty())).iterator();
        while (listed.hasNext()) {
            CatalogTablePartition partition = (CatalogTablePartition) listed.next();
            List values = new ArrayList();
            for (int i = 0; i < keys.size(); i++) values.add(partition.spec().apply(keys.apply(i)));
            List entry = new ArrayList();
            entry.add(values);
            entry.add(partition.location().toString());
            result.add(entry);
        }
        return JSON.writeValueAsString(result);
    }

    /** Points each partition of ``locationsJson`` ([[values, location], ...]) at its location, with the table's
     *  column list, in one metastore call. */
    public static void setPartitionLocations(SparkSession spark, final String database, final String name,
                                             String locationsJson) throws Exception {
        final List locations = (List) JSON.readValue(locationsJson, List.class);
        HiveExternalCatalog external = (HiveExternalCatalog) spark.sharedState().externalCatalog().unwrapped();
        final List columns = HiveClientImpl.toHiveTable(external.getTable(database, name), Option.empty())
            .getTTable().getSd().getCols();
        ((HiveClientImpl) external.client()).withHiveState(new AbstractFunction0() {
            public Object apply() {
                try {
                    List moved = new ArrayList();
                    for (int i = 0; i < locations.size(); i++) {
                        List entry = (List) locations.get(i);
                        Partition held = Hive.get().getMSC().getPartition(database, name, (List) entry.get(0));
                        held.getSd().setLocation(CatalogUtils.URIToString(CatalogUtils.stringToURI((String) entry.get(1))));
                        held.getSd().setCols(columns);
                        moved.add(held);
                    }
                    if (!moved.isEmpty()) Hive.get().getMSC().alter_partitions(database, name, moved);
                } catch (Exception error) {
                    throw new RuntimeException(error);
                }
                return null;
            }
        });
        spark.sessionState().catalog().invalidateCachedTable(new TableIdentifier(name, Option.apply(database)));
    }

    /** The tables among ``names`` that exist in ``database``, by name, read in one metastore call. */
    static Map existing(SessionCatalog catalog, String database, List names) throws Exception {
        List ids = new ArrayList();
        for (int i = 0; i < names.size(); i++) ids.add(new TableIdentifier((String) names.get(i), Option.apply(database)));
        Map found = new HashMap();
        List tables = (List) JavaConverters.seqAsJavaListConverter(catalog.getTablesByName(seq(ids))).asJava();
        for (int i = 0; i < tables.size(); i++) {
            CatalogTable table = (CatalogTable) tables.get(i);
            found.put(table.identifier().table(), table);
        }
        return found;
    }

    static CatalogTable newTable(TableIdentifier id, List columns, List keys, String location, String format,
                                 String sparkVersion) {
        StructType schema = withColumns(new StructType(), columns);
        for (int k = 0; k < keys.size(); k++) schema = schema.add((String) keys.get(k), DataTypes.StringType);
        boolean hive = "parquet".equals(format);
        CatalogStorageFormat storage = hive ? storage(location) : new CatalogStorageFormat(
            Option.apply(CatalogUtils.stringToURI(location)), Option.empty(), Option.empty(), Option.empty(), false,
            emptyMap());
        return new CatalogTable(id, CatalogTableType.EXTERNAL(), storage, schema, Option.apply(hive ? "hive" : format),
            seq(keys), Option.empty(), "", System.currentTimeMillis(), -1L, sparkVersion, emptyMap(), Option.empty(),
            Option.empty(), Option.empty(), seq(new ArrayList()), true, true, emptyMap(), Option.empty());
    }

    /** ``schema`` with the ``columns`` ([name, type]) it lacks appended, in order. */
    static StructType withColumns(StructType schema, List columns) {
        Set known = new HashSet();
        String[] names = schema.fieldNames();
        for (int i = 0; i < names.length; i++) known.add(names[i]);
        for (int i = 0; i < columns.size(); i++) {
            List column = (List) columns.get(i);
            String name = (String) column.get(0);
            if (known.add(name)) schema = schema.add(name, DataType.fromDDL((String) column.get(1)));
        }
        return schema;
    }

    static CatalogStorageFormat storage(String location) {
        return new CatalogStorageFormat(Option.apply(CatalogUtils.stringToURI(location)), Option.apply(INPUT_FORMAT),
            Option.apply(OUTPUT_FORMAT), Option.apply(SERDE), false,
            emptyMap().$plus(new scala.Tuple2("serialization.format", "1")));
    }

    static scala.collection.immutable.Map emptyMap() {
        return scala.collection.immutable.Map$.MODULE$.empty();
    }

    static Seq seq(List list) {
        return ((scala.collection.mutable.Buffer) JavaConverters.asScalaBufferConverter(list).asScala()).toList();
    }
}
