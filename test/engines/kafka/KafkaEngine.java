/**
 * Formats a KRaft log directory and runs a single-node Apache Kafka broker+controller in one JVM.
 * Usage: KafkaEngine <server.properties> <cluster-id> [format options...], the options passed on to
 * `kafka-storage format` (e.g. `--add-scram 'SCRAM-SHA-256=[name=u,password="p"]'`, SCRAM users KRaft
 * stores in the metadata log from the start). Stops (through Kafka's own shutdown hook)
 * when stdin closes, so the broker never outlives the test process that started it.
 */
public final class KafkaEngine {
  public static void main(String[] args) throws Exception {
    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // the parent keeps stdin open while it wants the broker
        }
      } catch (java.io.IOException ignored) {
        // a broken pipe means the parent is gone
      }
      System.exit(0);
    }, "stdin-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
    java.util.List<String> format = new java.util.ArrayList<>(java.util.List.of("format", "--ignore-formatted", "-t", args[1], "-c", args[0]));
    format.addAll(java.util.Arrays.asList(args).subList(2, args.length));
    int formatted = kafka.tools.StorageTool.execute(format.toArray(new String[0]), System.out);
    if (formatted != 0) {
      System.err.println("kafka storage format failed with " + formatted);
      System.exit(formatted);
    }
    kafka.Kafka.main(new String[] {args[0]});
  }
}
