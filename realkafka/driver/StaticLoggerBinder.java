// The client driver's SLF4J 1.7 binding (every supported release ships slf4j-api 1.7.36 and no
// binding, so the clients would log nothing): the Kafka clients' log records, at the levels asked
// for, handed to KafkaMcDriver, which writes them on stdout as protocol lines
// {"event": "log", "t", "level", "logger", "thread", "message", "error"} (realkafka/client.py keeps
// them in Driver.client_log). The TransactionManager's "Transition from state X to Y" (DEBUG) and
// "ProducerId set to P with epoch E" (INFO) are the client's own account of its state machine.
//
// Levels: the system property kafka.mc.log, "logger.prefix=LEVEL,...,root=LEVEL" (the longest
// matching prefix wins; TRACE, DEBUG, INFO, WARN, ERROR, OFF); root defaults to WARN.
package org.slf4j.impl;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import org.slf4j.ILoggerFactory;
import org.slf4j.Logger;
import org.slf4j.helpers.FormattingTuple;
import org.slf4j.helpers.MarkerIgnoringBase;
import org.slf4j.helpers.MessageFormatter;
import org.slf4j.spi.LoggerFactoryBinder;

public final class StaticLoggerBinder implements LoggerFactoryBinder {
    public static String REQUESTED_API_VERSION = "1.6.99";
    private static final StaticLoggerBinder SINGLETON = new StaticLoggerBinder();
    /** Where records go: set by KafkaMcDriver; {level, logger, thread, message, throwable}. */
    public static volatile Consumer<Object[]> SINK;

    static final String[] NAMES = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"};
    private static final Map<String, Integer> LEVELS = new ConcurrentHashMap<>();
    private static int rootLevel = 3;

    static {
        String spec = System.getProperty("kafka.mc.log", "");
        for (String part : spec.split(",")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                continue;
            }
            String name = part.substring(0, eq).trim();
            int level = level(part.substring(eq + 1).trim());
            if (name.equals("root")) {
                rootLevel = level;
            } else {
                LEVELS.put(name, level);
            }
        }
    }

    static int level(String name) {
        for (int i = 0; i < NAMES.length; i++) {
            if (NAMES[i].equalsIgnoreCase(name)) {
                return i;
            }
        }
        return 3;
    }

    /** The level a logger of this name logs at: the longest configured prefix's, else root's. */
    static int threshold(String logger) {
        int best = -1;
        int level = rootLevel;
        for (Map.Entry<String, Integer> e : LEVELS.entrySet()) {
            String p = e.getKey();
            if ((logger.equals(p) || logger.startsWith(p + ".") || logger.startsWith(p + "$"))
                    && p.length() > best) {
                best = p.length();
                level = e.getValue();
            }
        }
        return level;
    }

    private final ILoggerFactory factory = new Factory();

    public static StaticLoggerBinder getSingleton() {
        return SINGLETON;
    }

    @Override
    public ILoggerFactory getLoggerFactory() {
        return factory;
    }

    @Override
    public String getLoggerFactoryClassStr() {
        return Factory.class.getName();
    }

    static final class Factory implements ILoggerFactory {
        private final Map<String, Logger> loggers = new ConcurrentHashMap<>();

        @Override
        public Logger getLogger(String name) {
            return loggers.computeIfAbsent(name, KmcLogger::new);
        }
    }

    static final class KmcLogger extends MarkerIgnoringBase {
        private static final long serialVersionUID = 1L;
        private final int threshold;

        KmcLogger(String name) {
            this.name = name;
            this.threshold = threshold(name);
        }

        private boolean on(int level) {
            return level >= threshold && SINK != null;
        }

        private void log(int level, String format, Object... args) {
            if (!on(level)) {
                return;
            }
            FormattingTuple ft = MessageFormatter.arrayFormat(format, args);
            Consumer<Object[]> sink = SINK;
            if (sink != null) {
                sink.accept(new Object[] {NAMES[level], name, Thread.currentThread().getName(),
                        ft.getMessage(), ft.getThrowable()});
            }
        }

        private void logThrown(int level, String msg, Throwable t) {
            if (!on(level)) {
                return;
            }
            Consumer<Object[]> sink = SINK;
            if (sink != null) {
                sink.accept(new Object[] {NAMES[level], name, Thread.currentThread().getName(), msg, t});
            }
        }

        @Override public boolean isTraceEnabled() { return on(0); }
        @Override public void trace(String msg) { log(0, msg); }
        @Override public void trace(String f, Object a) { log(0, f, a); }
        @Override public void trace(String f, Object a, Object b) { log(0, f, a, b); }
        @Override public void trace(String f, Object... a) { log(0, f, a); }
        @Override public void trace(String msg, Throwable t) { logThrown(0, msg, t); }

        @Override public boolean isDebugEnabled() { return on(1); }
        @Override public void debug(String msg) { log(1, msg); }
        @Override public void debug(String f, Object a) { log(1, f, a); }
        @Override public void debug(String f, Object a, Object b) { log(1, f, a, b); }
        @Override public void debug(String f, Object... a) { log(1, f, a); }
        @Override public void debug(String msg, Throwable t) { logThrown(1, msg, t); }

        @Override public boolean isInfoEnabled() { return on(2); }
        @Override public void info(String msg) { log(2, msg); }
        @Override public void info(String f, Object a) { log(2, f, a); }
        @Override public void info(String f, Object a, Object b) { log(2, f, a, b); }
        @Override public void info(String f, Object... a) { log(2, f, a); }
        @Override public void info(String msg, Throwable t) { logThrown(2, msg, t); }

        @Override public boolean isWarnEnabled() { return on(3); }
        @Override public void warn(String msg) { log(3, msg); }
        @Override public void warn(String f, Object a) { log(3, f, a); }
        @Override public void warn(String f, Object a, Object b) { log(3, f, a, b); }
        @Override public void warn(String f, Object... a) { log(3, f, a); }
        @Override public void warn(String msg, Throwable t) { logThrown(3, msg, t); }

        @Override public boolean isErrorEnabled() { return on(4); }
        @Override public void error(String msg) { log(4, msg); }
        @Override public void error(String f, Object a) { log(4, f, a); }
        @Override public void error(String f, Object a, Object b) { log(4, f, a, b); }
        @Override public void error(String f, Object... a) { log(4, f, a); }
        @Override public void error(String msg, Throwable t) { logThrown(4, msg, t); }
    }
}
