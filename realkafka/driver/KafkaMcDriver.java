// The client driver of kafka-mc's real-Kafka harness (realkafka/client.py starts it; issue 41).
//
// One JVM runs the real Java clients of one Kafka release (kafka-clients on the classpath:
// KafkaProducer, KafkaConsumer, Admin) and takes commands on stdin, one JSON object a line:
//
//   {"id": 7, "target": "p1", "op": "send", "args": {"topic": "t", "partition": 0, "key": "k", "value": "v"}}
//
// "target" is a client's name (its operations run on that client's own thread, in order, like an
// application thread; different clients run concurrently), or null for the driver's own ops
// ("ping", "producer", "consumer", "admin": create a client from {"name", "config", "defaults"};
// "exit"). A send with "async": true completes from its callback while the producer's thread goes
// on; a close with "immediate": true runs on a thread of its own. It answers on stdout, one JSON
// object a line, written under one lock with the timestamp taken inside it (so the lines' order
// is their times' order):
//
//   {"event": "ready", "t": <System.nanoTime()>, "kafka": "<kafka-clients version>", "java": "17..."}
//   {"id": 7, "event": "invoke", "t": ...}                      just before the client's method is called
//   {"id": 7, "event": "ok", "t": ..., "value": <result>}      just after it returned
//   {"id": 7, "event": "fail", "t": ..., "error": {"class": "ProducerFencedException",
//        "message": "...", "causes": [["KafkaException", "..."], ...]}}
//   {"event": "log", "t": ..., "level": "DEBUG", "logger": "...TransactionManager", "thread": "...",
//        "message": "[Producer clientId=p1, transactionalId=tx] Transition from state ...", "error": null}
//
// The log lines are the clients' own SLF4J records at the levels -Dkafka.mc.log asks for
// (StaticLoggerBinder.java, this driver's binding).
//
// t is System.nanoTime() (CLOCK_MONOTONIC on Linux, the clock of Python's time.monotonic_ns()).
// When stdin closes the JVM halts at once, and so it does when its parent process ends: it cannot
// outlive the Python process that started it.
// Only the APIs present in every supported release (3.6.2 .. 4.4.0) are used, no reflection
// needed; it is compiled against each release's own jars (realkafka/fetch.py). In 4.x the two
// ConsumerGroupMetadata constructors are deprecated for removal and KafkaConsumer.close(Duration)
// is deprecated: a later release may need reflection there.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.DescribeTransactionsResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.TopicExistsException;

public final class KafkaMcDriver {
    private static PrintStream out;
    private static final Object OUT = new Object();
    private static final Map<String, Client> CLIENTS = new ConcurrentHashMap<>();

    public static void main(String[] argv) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);   // nothing but the protocol on stdout
        org.slf4j.impl.StaticLoggerBinder.SINK = KafkaMcDriver::logRecord;
        // Belt and braces beside stdin's end: halt when the process that started the driver ends
        // (a forked child of it could hold the stdin pipe open).
        ProcessHandle.current().parent().ifPresent(
                parent -> parent.onExit().thenRun(() -> Runtime.getRuntime().halt(0)));
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("event", "ready");
        ready.put("kafka", kafkaVersion());
        ready.put("java", System.getProperty("java.version"));
        emit(ready);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            long id = -1;
            try {
                @SuppressWarnings("unchecked")
                Map<String, Object> req = (Map<String, Object>) Json.parse(line);
                id = ((Number) req.get("id")).longValue();
                dispatch(id, (String) req.get("target"), (String) req.get("op"), args(req.get("args")));
            } catch (Throwable t) {
                fail(id, t);
            }
        }
        Runtime.getRuntime().halt(0);   // stdin closed: the Python side is gone or done
    }

    /** One log record of the clients (StaticLoggerBinder): a protocol line. */
    static void logRecord(Object[] r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", "log");
        m.put("level", r[0]);
        m.put("logger", r[1]);
        m.put("thread", r[2]);
        m.put("message", r[3]);
        Throwable t = (Throwable) r[4];
        m.put("error", t == null ? null : List.of(t.getClass().getSimpleName(), String.valueOf(t.getMessage())));
        emit(m);
    }

    /** kafka-clients' version, from the resource its AppInfoParser reads (that class moved in 4.x). */
    private static String kafkaVersion() {
        try (java.io.InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties p = new Properties();
            if (in != null) {
                p.load(in);
            }
            return p.getProperty("version", "unknown");
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> args(Object a) {
        return a == null ? new HashMap<>() : (Map<String, Object>) a;
    }

    private static void dispatch(long id, String target, String op, Map<String, Object> a) {
        if (target == null) {
            switch (op) {
                case "ping":
                    emitEvent(id, "invoke", null, null);
                    emitEvent(id, "ok", "value", "pong");
                    return;
                case "exit":
                    Runtime.getRuntime().halt(0);
                    return;
                case "producer":
                case "consumer":
                case "admin": {
                    String name = (String) a.get("name");
                    Client old = CLIENTS.get(name);
                    if (old != null && !old.closed) {
                        throw new IllegalArgumentException("a client named " + name + " exists");
                    }
                    Client c = new Client(name, op);
                    CLIENTS.put(name, c);
                    c.submit(id, () -> {
                        c.open(strings(a.get("defaults")), strings(a.get("config")));
                        return null;
                    });
                    return;
                }
                default:
                    throw new IllegalArgumentException("unknown driver op " + op);
            }
        }
        Client c = CLIENTS.get(target);
        if (c == null) {
            throw new IllegalArgumentException("no client named " + target);
        }
        if ("close".equals(op) && Boolean.TRUE.equals(a.get("immediate"))) {
            // Closed from a thread of its own, not queued behind the client's pending operations
            // (the application abandons a producer whose commit is held, say).
            Thread th = new Thread(() -> run(id, () -> c.call(op, a)), "kmc-close-" + target);
            th.setDaemon(true);
            th.start();
            return;
        }
        if ("send".equals(op) && Boolean.TRUE.equals(a.get("async"))) {
            // KafkaProducer.send(record, callback) on the producer's thread, which then goes on
            // with its next operation; the op completes when the callback fires (the broker's
            // answer, on the producer's network thread): records pipelined as an application
            // sends them, each its own op in the history.
            c.thread.submit(() -> c.sendAsync(id, a));
            return;
        }
        c.submit(id, () -> c.call(op, a));
    }

    interface Op {
        Object call() throws Exception;
    }

    static void run(long id, Op op) {
        emitEvent(id, "invoke", null, null);
        Object value;
        try {
            value = op.call();
        } catch (Throwable t) {
            fail(id, t);
            return;
        }
        emitEvent(id, "ok", "value", value);
    }

    static void fail(long id, Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        Map<String, Object> err = new LinkedHashMap<>();
        err.put("class", t.getClass().getSimpleName());
        err.put("message", t.getMessage());
        List<Object> causes = new ArrayList<>();
        Set<Throwable> seen = new HashSet<>();
        for (Throwable c = t.getCause(); c != null && seen.add(c); c = c.getCause()) {
            causes.add(List.of(c.getClass().getSimpleName(), String.valueOf(c.getMessage())));
        }
        err.put("causes", causes);
        emitEvent(id, "fail", "error", err);
    }

    static void emitEvent(long id, String event, String key, Object value) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("event", event);
        if (key != null) {
            m.put(key, value);
        }
        emit(m);
    }

    static void emit(Map<String, Object> m) {
        synchronized (OUT) {
            m.put("t", System.nanoTime());
            StringBuilder b = new StringBuilder(128);
            Json.write(b, m);
            out.print(b.append('\n'));
            out.flush();
        }
    }

    static Map<String, String> strings(Object o) {
        Map<String, String> m = new LinkedHashMap<>();
        if (o instanceof Map) {
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                m.put(String.valueOf(e.getKey()), e.getValue() == null ? null : String.valueOf(e.getValue()));
            }
        }
        return m;
    }

    // ---- argument helpers -------------------------------------------------------------------

    static String str(Map<String, Object> a, String k) {
        Object v = a.get(k);
        return v == null ? null : String.valueOf(v);
    }

    static long num(Map<String, Object> a, String k, long dflt) {
        Object v = a.get(k);
        return v == null ? dflt : ((Number) v).longValue();
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Map<String, Object> a, String k) {
        Object v = a.get(k);
        return v == null ? null : (List<Object>) v;
    }

    @SuppressWarnings("unchecked")
    static TopicPartition tp(Object o) {
        Map<String, Object> m = (Map<String, Object>) o;
        return new TopicPartition((String) m.get("topic"), ((Number) m.get("partition")).intValue());
    }

    static List<TopicPartition> tps(Map<String, Object> a, String k) {
        List<Object> l = list(a, k);
        if (l == null) {
            return null;
        }
        List<TopicPartition> r = new ArrayList<>();
        for (Object o : l) {
            r.add(tp(o));
        }
        return r;
    }

    @SuppressWarnings("unchecked")
    static Map<TopicPartition, OffsetAndMetadata> offsets(Map<String, Object> a, String k) {
        List<Object> l = list(a, k);
        if (l == null) {
            return null;
        }
        Map<TopicPartition, OffsetAndMetadata> r = new LinkedHashMap<>();
        for (Object o : l) {
            r.put(tp(o), new OffsetAndMetadata(((Number) ((Map<String, Object>) o).get("offset")).longValue()));
        }
        return r;
    }

    static Map<String, Object> tpMap(TopicPartition tp) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("topic", tp.topic());
        m.put("partition", tp.partition());
        return m;
    }

    static Object opt(OptionalLong o) {
        return o.isPresent() ? (Object) o.getAsLong() : null;
    }

    static Object opt(OptionalInt o) {
        return o.isPresent() ? (Object) o.getAsInt() : null;
    }

    static Map<String, Object> errorMap(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("class", t.getClass().getSimpleName());
        m.put("message", t.getMessage());
        return m;
    }

    // ---- one client: a producer, a consumer or an admin, with its own thread ---------------

    static final class Client {
        final String name;
        final String kind;
        final ExecutorService thread;
        volatile boolean closed;
        KafkaProducer<String, String> producer;
        KafkaConsumer<String, String> consumer;
        Admin admin;

        Client(String name, String kind) {
            this.name = name;
            this.kind = kind;
            this.thread = Executors.newSingleThreadExecutor(r -> {
                Thread th = new Thread(r, "kmc-" + name);
                th.setDaemon(true);
                return th;
            });
        }

        Future<?> submit(long id, Op op) {
            return thread.submit(() -> run(id, op));
        }

        /** The client, from the driver's defaults (only the names this kind of client knows:
         *  no "supplied but not used" warning) and its own config (every name, as given). */
        void open(Map<String, String> defaults, Map<String, String> config) {
            Set<String> known = "producer".equals(kind) ? ProducerConfig.configNames()
                    : "consumer".equals(kind) ? ConsumerConfig.configNames() : AdminClientConfig.configNames();
            Properties props = new Properties();
            for (Map.Entry<String, String> e : defaults.entrySet()) {
                if (e.getValue() != null && known.contains(e.getKey())) {
                    props.put(e.getKey(), e.getValue());
                }
            }
            for (Map.Entry<String, String> e : config.entrySet()) {
                if (e.getValue() != null) {
                    props.put(e.getKey(), e.getValue());
                } else {
                    props.remove(e.getKey());
                }
            }
            String ser = "org.apache.kafka.common.serialization.StringSerializer";
            String de = "org.apache.kafka.common.serialization.StringDeserializer";
            switch (kind) {
                case "producer":
                    props.putIfAbsent("key.serializer", ser);
                    props.putIfAbsent("value.serializer", ser);
                    producer = new KafkaProducer<>(props);
                    break;
                case "consumer":
                    props.putIfAbsent("key.deserializer", de);
                    props.putIfAbsent("value.deserializer", de);
                    consumer = new KafkaConsumer<>(props);
                    break;
                default:
                    admin = Admin.create(props);
            }
        }

        Object call(String op, Map<String, Object> a) throws Exception {
            switch (kind) {
                case "producer":
                    return producerOp(op, a);
                case "consumer":
                    return consumerOp(op, a);
                default:
                    return adminOp(op, a);
            }
        }

        // -- producer ----------------------------------------------------------------------

        Object producerOp(String op, Map<String, Object> a) throws Exception {
            KafkaProducer<String, String> p = producer;
            switch (op) {
                case "init_transactions":
                    p.initTransactions();
                    return null;
                case "begin_transaction":
                    p.beginTransaction();
                    return null;
                case "send":
                    return metadata(p.send(record(a)).get());
                case "send_offsets_to_transaction":
                    p.sendOffsetsToTransaction(offsets(a, "offsets"), groupMetadata(a));
                    return null;
                case "commit_transaction":
                    p.commitTransaction();
                    return null;
                case "abort_transaction":
                    p.abortTransaction();
                    return null;
                case "flush":
                    p.flush();
                    return null;
                case "close":
                    closed = true;
                    p.close(Duration.ofMillis(num(a, "timeout_ms", 5000)));
                    return null;
                default:
                    throw new IllegalArgumentException("unknown producer op " + op);
            }
        }

        static ProducerRecord<String, String> record(Map<String, Object> a) {
            Object part = a.get("partition");
            return new ProducerRecord<>(str(a, "topic"), part == null ? null : ((Number) part).intValue(),
                    str(a, "key"), str(a, "value"));
        }

        static Map<String, Object> metadata(RecordMetadata md) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("partition", md.partition());
            m.put("offset", md.hasOffset() ? md.offset() : null);
            return m;
        }

        void sendAsync(long id, Map<String, Object> a) {
            java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
            emitEvent(id, "invoke", null, null);
            try {
                producer.send(record(a), (md, ex) -> {
                    if (done.compareAndSet(false, true)) {
                        if (ex != null) {
                            fail(id, ex);
                        } else {
                            emitEvent(id, "ok", "value", metadata(md));
                        }
                    }
                });
            } catch (Throwable t) {
                if (done.compareAndSet(false, true)) {
                    fail(id, t);
                }
            }
        }

        @SuppressWarnings("unchecked")
        static ConsumerGroupMetadata groupMetadata(Map<String, Object> a) throws Exception {
            String consumerName = str(a, "consumer");
            if (consumerName != null) {
                // A consumer is not thread-safe: ask on its own thread.
                Client c = CLIENTS.get(consumerName);
                if (c == null || c.consumer == null) {
                    throw new IllegalArgumentException("no consumer named " + consumerName);
                }
                return c.thread.submit(() -> c.consumer.groupMetadata()).get();
            }
            Object gm = a.get("group_metadata");
            if (gm instanceof Map) {
                Map<String, Object> m = (Map<String, Object>) gm;
                return new ConsumerGroupMetadata((String) m.get("group_id"),
                        ((Number) m.get("generation_id")).intValue(), (String) m.get("member_id"),
                        Optional.ofNullable((String) m.get("group_instance_id")));
            }
            return new ConsumerGroupMetadata(str(a, "group"));
        }

        // -- consumer ----------------------------------------------------------------------

        Object consumerOp(String op, Map<String, Object> a) throws Exception {
            KafkaConsumer<String, String> c = consumer;
            switch (op) {
                case "assign":
                    c.assign(tps(a, "partitions"));
                    return null;
                case "subscribe":
                    c.subscribe(new ArrayList<>(stringList(list(a, "topics"))));
                    return null;
                case "seek_to_beginning": {
                    List<TopicPartition> ps = tps(a, "partitions");
                    c.seekToBeginning(ps == null ? c.assignment() : ps);
                    return null;
                }
                case "seek":
                    c.seek(tp(a), num(a, "offset", 0));
                    return null;
                case "poll":
                    return records(c.poll(Duration.ofMillis(num(a, "timeout_ms", 100))));
                case "position":
                    return c.position(tp(a));
                case "end_offsets":
                    return offsetList(c.endOffsets(tps(a, "partitions")));
                case "commit_sync": {
                    Map<TopicPartition, OffsetAndMetadata> o = offsets(a, "offsets");
                    if (o == null) {
                        c.commitSync();
                    } else {
                        c.commitSync(o);
                    }
                    return null;
                }
                case "committed": {
                    Map<TopicPartition, OffsetAndMetadata> m = c.committed(new HashSet<>(tps(a, "partitions")));
                    List<Object> r = new ArrayList<>();
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : m.entrySet()) {
                        Map<String, Object> x = tpMap(e.getKey());
                        x.put("offset", e.getValue() == null ? null : e.getValue().offset());
                        r.add(x);
                    }
                    return r;
                }
                case "group_metadata": {
                    ConsumerGroupMetadata g = c.groupMetadata();
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("group_id", g.groupId());
                    m.put("generation_id", g.generationId());
                    m.put("member_id", g.memberId());
                    m.put("group_instance_id", g.groupInstanceId().orElse(null));
                    return m;
                }
                case "read_all": {
                    // Assign, seek to the beginning and poll until every partition's position reached
                    // its end offset (the LSO under read_committed, the high watermark else) as it was
                    // when the read started, or the time ran out.
                    List<TopicPartition> ps = tps(a, "partitions");
                    c.assign(ps);
                    c.seekToBeginning(ps);
                    Map<TopicPartition, Long> end = c.endOffsets(ps);
                    long deadline = System.nanoTime() + num(a, "timeout_ms", 10000) * 1_000_000L;
                    List<Object> got = new ArrayList<>();
                    while (true) {
                        boolean done = true;
                        for (TopicPartition tp : ps) {
                            if (c.position(tp) < end.get(tp)) {
                                done = false;
                                break;
                            }
                        }
                        if (done) {
                            return got;
                        }
                        if (System.nanoTime() > deadline) {
                            throw new org.apache.kafka.common.errors.TimeoutException(
                                    "read_all: " + got.size() + " records read, end offsets " + end + " not reached");
                        }
                        got.addAll(records(c.poll(Duration.ofMillis(200))));
                    }
                }
                case "close":
                    closed = true;
                    c.close(Duration.ofMillis(num(a, "timeout_ms", 5000)));
                    return null;
                default:
                    throw new IllegalArgumentException("unknown consumer op " + op);
            }
        }

        static List<String> stringList(List<Object> l) {
            List<String> r = new ArrayList<>();
            if (l != null) {
                for (Object o : l) {
                    r.add(String.valueOf(o));
                }
            }
            return r;
        }

        static List<Object> records(ConsumerRecords<String, String> rs) {
            List<Object> r = new ArrayList<>();
            for (ConsumerRecord<String, String> x : rs) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("topic", x.topic());
                m.put("partition", x.partition());
                m.put("offset", x.offset());
                m.put("key", x.key());
                m.put("value", x.value());
                r.add(m);
            }
            return r;
        }

        static List<Object> offsetList(Map<TopicPartition, Long> offsets) {
            List<Object> r = new ArrayList<>();
            for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
                Map<String, Object> m = tpMap(e.getKey());
                m.put("offset", e.getValue());
                r.add(m);
            }
            return r;
        }

        // -- admin -------------------------------------------------------------------------

        @SuppressWarnings("unchecked")
        Object adminOp(String op, Map<String, Object> a) throws Exception {
            Admin ad = admin;
            switch (op) {
                case "create_topics": {
                    List<NewTopic> topics = new ArrayList<>();
                    for (Object o : list(a, "topics")) {
                        Map<String, Object> t = (Map<String, Object>) o;
                        NewTopic nt;
                        if (t.get("assignment") != null) {
                            // {partition: [broker ids]}: where each partition's replicas go (the
                            // first its preferred leader), e.g. away from the coordinator's broker
                            Map<Integer, List<Integer>> assignment = new TreeMap<>();
                            for (Map.Entry<String, Object> e : ((Map<String, Object>) t.get("assignment")).entrySet()) {
                                List<Integer> replicas = new ArrayList<>();
                                for (Object b : (List<Object>) e.getValue()) {
                                    replicas.add(((Number) b).intValue());
                                }
                                assignment.put(Integer.parseInt(e.getKey()), replicas);
                            }
                            nt = new NewTopic((String) t.get("name"), assignment);
                        } else {
                            nt = new NewTopic((String) t.get("name"), ((Number) t.get("partitions")).intValue(),
                                    ((Number) t.get("replication")).shortValue());
                        }
                        if (t.get("config") != null) {
                            nt.configs(strings(t.get("config")));
                        }
                        topics.add(nt);
                    }
                    Map<String, Object> r = new LinkedHashMap<>();
                    for (Map.Entry<String, org.apache.kafka.common.KafkaFuture<Void>> e
                            : ad.createTopics(topics).values().entrySet()) {
                        try {
                            e.getValue().get();
                            r.put(e.getKey(), "created");
                        } catch (ExecutionException x) {
                            if (x.getCause() instanceof TopicExistsException && Boolean.TRUE.equals(a.get("exist_ok"))) {
                                r.put(e.getKey(), "exists");
                            } else {
                                throw x;
                            }
                        }
                    }
                    return r;
                }
                case "describe_topics": {
                    Map<String, TopicDescription> d = ad.describeTopics(stringList(list(a, "topics"))).allTopicNames().get();
                    Map<String, Object> r = new LinkedHashMap<>();
                    for (TopicDescription td : d.values()) {
                        List<Object> parts = new ArrayList<>();
                        for (TopicPartitionInfo pi : td.partitions()) {
                            Map<String, Object> m = new LinkedHashMap<>();
                            m.put("partition", pi.partition());
                            m.put("leader", pi.leader() == null ? null : pi.leader().id());
                            m.put("replicas", nodeIds(pi.replicas()));
                            m.put("isr", nodeIds(pi.isr()));
                            parts.add(m);
                        }
                        r.put(td.name(), parts);
                    }
                    return r;
                }
                case "describe_cluster": {
                    DescribeClusterResult d = ad.describeCluster();
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("cluster_id", d.clusterId().get());
                    Node ctl = d.controller().get();
                    r.put("controller", ctl == null ? null : ctl.id());
                    List<Object> nodes = new ArrayList<>();
                    for (Node n : d.nodes().get()) {
                        Map<String, Object> m = new LinkedHashMap<>();
                        m.put("id", n.id());
                        m.put("host", n.host());
                        m.put("port", n.port());
                        nodes.add(m);
                    }
                    r.put("nodes", nodes);
                    return r;
                }
                case "describe_transactions": {
                    List<String> ids = stringList(list(a, "transactional_ids"));
                    DescribeTransactionsResult d = ad.describeTransactions(ids);
                    Map<String, Object> r = new LinkedHashMap<>();
                    for (String id : ids) {
                        try {
                            TransactionDescription td = d.description(id).get();
                            Map<String, Object> m = new LinkedHashMap<>();
                            m.put("state", td.state().toString());
                            m.put("coordinator_id", td.coordinatorId());
                            m.put("producer_id", td.producerId());
                            m.put("producer_epoch", td.producerEpoch());
                            m.put("transaction_timeout_ms", td.transactionTimeoutMs());
                            m.put("transaction_start_time_ms", opt(td.transactionStartTimeMs()));
                            List<Object> parts = new ArrayList<>();
                            for (TopicPartition tp : td.topicPartitions()) {
                                parts.add(tpMap(tp));
                            }
                            m.put("topic_partitions", parts);
                            r.put(id, m);
                        } catch (ExecutionException x) {
                            Map<String, Object> m = new LinkedHashMap<>();
                            m.put("state", null);
                            m.put("error", errorMap(x));
                            r.put(id, m);
                        }
                    }
                    return r;
                }
                case "list_transactions": {
                    ListTransactionsOptions o = new ListTransactionsOptions();
                    Collection<TransactionListing> ls = ad.listTransactions(o).all().get();
                    List<Object> r = new ArrayList<>();
                    for (TransactionListing l : ls) {
                        Map<String, Object> m = new LinkedHashMap<>();
                        m.put("transactional_id", l.transactionalId());
                        m.put("producer_id", l.producerId());
                        m.put("state", l.state().toString());
                        r.add(m);
                    }
                    return r;
                }
                case "describe_producers": {
                    List<TopicPartition> ps = tps(a, "partitions");
                    DescribeProducersResult d = ad.describeProducers(ps);
                    List<Object> r = new ArrayList<>();
                    for (TopicPartition tp : ps) {
                        Map<String, Object> m = tpMap(tp);
                        try {
                            List<Object> producers = new ArrayList<>();
                            for (ProducerState s : d.partitionResult(tp).get().activeProducers()) {
                                Map<String, Object> x = new LinkedHashMap<>();
                                x.put("producer_id", s.producerId());
                                x.put("producer_epoch", s.producerEpoch());
                                x.put("last_sequence", s.lastSequence());
                                x.put("last_timestamp", s.lastTimestamp());
                                x.put("coordinator_epoch", opt(s.coordinatorEpoch()));
                                x.put("current_transaction_start_offset", opt(s.currentTransactionStartOffset()));
                                producers.add(x);
                            }
                            m.put("producers", producers);
                        } catch (ExecutionException x) {
                            m.put("producers", null);
                            m.put("error", errorMap(x));
                        }
                        r.add(m);
                    }
                    return r;
                }
                case "list_offsets": {
                    List<TopicPartition> ps = tps(a, "partitions");
                    String spec = str(a, "spec");
                    Map<TopicPartition, OffsetSpec> q = new LinkedHashMap<>();
                    for (TopicPartition tp : ps) {
                        q.put(tp, "earliest".equals(spec) ? OffsetSpec.earliest() : OffsetSpec.latest());
                    }
                    IsolationLevel iso = "read_uncommitted".equals(str(a, "isolation"))
                            ? IsolationLevel.READ_UNCOMMITTED : IsolationLevel.READ_COMMITTED;
                    Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> res =
                            ad.listOffsets(q, new ListOffsetsOptions(iso)).all().get();
                    List<Object> r = new ArrayList<>();
                    for (TopicPartition tp : ps) {
                        Map<String, Object> m = tpMap(tp);
                        m.put("offset", res.get(tp).offset());
                        r.add(m);
                    }
                    return r;
                }
                case "fence_producers":
                    ad.fenceProducers(stringList(list(a, "transactional_ids"))).all().get();
                    return null;
                case "list_group_offsets": {
                    Map<TopicPartition, OffsetAndMetadata> m =
                            ad.listConsumerGroupOffsets(str(a, "group")).partitionsToOffsetAndMetadata().get();
                    List<Object> r = new ArrayList<>();
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : m.entrySet()) {
                        Map<String, Object> x = tpMap(e.getKey());
                        x.put("offset", e.getValue() == null ? null : e.getValue().offset());
                        r.add(x);
                    }
                    return r;
                }
                case "close":
                    closed = true;
                    ad.close(Duration.ofMillis(num(a, "timeout_ms", 5000)));
                    return null;
                default:
                    throw new IllegalArgumentException("unknown admin op " + op);
            }
        }

        static List<Object> nodeIds(List<Node> nodes) {
            List<Object> r = new ArrayList<>();
            for (Node n : nodes) {
                r.add(n.id());
            }
            return r;
        }
    }

    // ---- a small JSON reader and writer (no library beyond the release's classpath) -------

    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String s) {
            Json j = new Json(s);
            j.ws();
            Object v = j.value();
            j.ws();
            if (j.i != s.length()) {
                throw j.error("trailing characters");
            }
            return v;
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("bad JSON at " + i + ": " + what);
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        private Object value() {
            if (i >= s.length()) {
                throw error("unexpected end");
            }
            char c = s.charAt(i);
            switch (c) {
                case '{': {
                    i++;
                    Map<String, Object> m = new LinkedHashMap<>();
                    ws();
                    if (s.charAt(i) == '}') {
                        i++;
                        return m;
                    }
                    while (true) {
                        ws();
                        String k = string();
                        ws();
                        expect(':');
                        ws();
                        m.put(k, value());
                        ws();
                        if (s.charAt(i) == ',') {
                            i++;
                        } else {
                            expect('}');
                            return m;
                        }
                    }
                }
                case '[': {
                    i++;
                    List<Object> l = new ArrayList<>();
                    ws();
                    if (s.charAt(i) == ']') {
                        i++;
                        return l;
                    }
                    while (true) {
                        ws();
                        l.add(value());
                        ws();
                        if (s.charAt(i) == ',') {
                            i++;
                        } else {
                            expect(']');
                            return l;
                        }
                    }
                }
                case '"':
                    return string();
                case 't':
                    return literal("true", Boolean.TRUE);
                case 'f':
                    return literal("false", Boolean.FALSE);
                case 'n':
                    return literal("null", null);
                default:
                    return number();
            }
        }

        private void expect(char c) {
            if (i >= s.length() || s.charAt(i) != c) {
                throw error("expected " + c);
            }
            i++;
        }

        private Object literal(String word, Object v) {
            if (!s.startsWith(word, i)) {
                throw error("expected " + word);
            }
            i += word.length();
            return v;
        }

        private Object number() {
            int start = i;
            boolean real = false;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                real |= ".eE".indexOf(s.charAt(i)) >= 0;
                i++;
            }
            if (start == i) {
                throw error("unexpected character");
            }
            String t = s.substring(start, i);
            return real ? (Object) Double.parseDouble(t) : (Object) Long.parseLong(t);
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                if (i >= s.length()) {
                    throw error("unterminated string");
                }
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u':
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                        break;
                    default: b.append(e);   // \" \\ \/
                }
            }
        }

        static void write(StringBuilder b, Object v) {
            if (v == null) {
                b.append("null");
            } else if (v instanceof String) {
                quote(b, (String) v);
            } else if (v instanceof Boolean || v instanceof Integer || v instanceof Long || v instanceof Short) {
                b.append(v);
            } else if (v instanceof Number) {
                double d = ((Number) v).doubleValue();
                b.append(Double.isFinite(d) ? Double.toString(d) : "null");
            } else if (v instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    quote(b, String.valueOf(e.getKey()));
                    b.append(':');
                    write(b, e.getValue());
                }
                b.append('}');
            } else if (v instanceof Collection) {
                b.append('[');
                boolean first = true;
                for (Object o : (Collection<?>) v) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    write(b, o);
                }
                b.append(']');
            } else if (v instanceof Optional) {
                write(b, ((Optional<?>) v).orElse(null));
            } else {
                quote(b, v.toString());
            }
        }

        static void quote(StringBuilder b, String s) {
            b.append('"');
            for (int k = 0; k < s.length(); k++) {
                char c = s.charAt(k);
                switch (c) {
                    case '"': b.append("\\\""); break;
                    case '\\': b.append("\\\\"); break;
                    case '\n': b.append("\\n"); break;
                    case '\r': b.append("\\r"); break;
                    case '\t': b.append("\\t"); break;
                    default:
                        if (c < 0x20 || (c >= 0xD800 && c <= 0xDFFF) || c > 0x7E) {
                            b.append(String.format("\\u%04x", (int) c));
                        } else {
                            b.append(c);
                        }
                }
            }
            b.append('"');
        }
    }
}
