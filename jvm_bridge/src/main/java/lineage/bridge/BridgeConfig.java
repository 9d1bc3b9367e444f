package lineage.bridge;

import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.SparkConf;

/** The {@code spark.lineage.*} settings the bridge reads, with their defaults. */
final class BridgeConfig {
    final String python;
    final String pythonPath;          // prepended to the worker's PYTHONPATH; may be empty
    final String store;               // may be empty: the worker then uses its default
    final long drainTimeoutMs;
    final long workerStartTimeoutMs;
    final long stallTimeoutMs;        // a worker that gives no sign of life this long during a call is stopped
    final int queueCapacity;
    final int workerRestarts;
    final String logLevel;
    final String openlineageUrl;      // may be empty: no live OpenLineage emission
    final String serverUrl;           // may be empty: write the store file, not a lineage server
    final String serverToken;         // passed to the worker's environment only, never logged
    final String sqlText;             // spark.lineage.sqlText (full, masked, none); may be empty: full
    final String tlsCa;               // spark.lineage.tls.ca: a CA file for https; may be empty
    final Map<String, String> kafka;  // spark.lineage.kafka.* without the prefix; may hold secrets, never logged

    private BridgeConfig(SparkConf conf, Map<String, String> env) {
        this.python = firstNonEmpty(
            conf.get("spark.lineage.python", ""),
            conf.get("spark.pyspark.driver.python", ""),
            conf.get("spark.pyspark.python", ""),
            env.getOrDefault("PYSPARK_DRIVER_PYTHON", ""),
            env.getOrDefault("PYSPARK_PYTHON", ""),
            "python3");
        this.pythonPath = conf.get("spark.lineage.pythonPath", "");
        this.store = conf.get("spark.lineage.store", "");
        this.drainTimeoutMs = conf.getLong("spark.lineage.drainTimeoutMs", 30000L);
        this.workerStartTimeoutMs = conf.getLong("spark.lineage.workerStartTimeoutMs", 60000L);
        this.stallTimeoutMs = conf.getLong("spark.lineage.stallTimeoutMs", 10000L);
        this.queueCapacity = conf.getInt("spark.lineage.queueCapacity", 10000);
        this.workerRestarts = conf.getInt("spark.lineage.workerRestarts", 1);
        this.logLevel = conf.get("spark.lineage.logLevel", "");
        this.openlineageUrl = conf.get("spark.lineage.openlineage.url", "");
        this.serverUrl = conf.get("spark.lineage.url", "");
        this.serverToken = conf.get("spark.lineage.token", "");
        this.sqlText = conf.get("spark.lineage.sqlText", "");
        this.tlsCa = conf.get("spark.lineage.tls.ca", "");
        Map<String, String> kafkaKeys = new TreeMap<>();
        for (scala.Tuple2<String, String> kv : conf.getAllWithPrefix("spark.lineage.kafka.")) {
            kafkaKeys.put(kv._1(), kv._2());
        }
        this.kafka = kafkaKeys;
    }

    static BridgeConfig from(SparkConf conf) {
        return new BridgeConfig(conf == null ? new SparkConf(false) : conf, System.getenv());
    }

    private static String firstNonEmpty(String... values) {
        for (String v : values) {
            if (v != null && !v.trim().isEmpty()) {
                return v.trim();
            }
        }
        return "";
    }
}
