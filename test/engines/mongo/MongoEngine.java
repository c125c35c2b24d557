import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

/**
 * Starts mongo-java-server (in-memory backend) on 127.0.0.1:<port> for the test engines layer.
 * Prints "READY <port>" once it listens; stops when stdin closes (the parent test process died) or on SIGTERM.
 */
public final class MongoEngine {
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    MongoServer server = new MongoServer(new MemoryBackend());
    server.bind("127.0.0.1", port);
    Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow));
    System.out.println("READY " + port);
    System.out.flush();
    while (System.in.read() != -1) {
      // keep running until the parent closes our stdin
    }
    server.shutdownNow();
    System.exit(0);
  }
}
