#!/usr/bin/env bash
# A server run as a detached background process and tracked by a pidfile, for
# kafka.sh, kafka-cluster.sh and registry.sh. Sourced; expects HOST and the
# sourcing script's log and die. stop_server, await_ready and already_serving
# also call its running_pid <workdir> (pidfile_pid on its own pidfile and
# command line), await_ready its do_stop <workdir>.

# True if something accepts TCP connections on HOST:$1.
port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# True while $1 is a live process. A SIGKILLed JVM stays a zombie until its
# parent (after setsid: whatever reaps orphans) waits for it; that counts as
# dead.
alive() {
  local st
  st="$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ -n "$st" && "$st" != Z && "$st" != X ]]
}

# pidfile_pid <pidfile> <marker>: the PID in <pidfile> if that process is alive
# and its command line (arguments joined by spaces) holds <marker>, which only
# our server's does: guards against a stale pidfile whose PID was reused.
pidfile_pid() {
  local pid
  [[ -f "$1" ]] || return 1
  pid="$(<"$1")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  [[ "$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" == *"$2"* ]] || return 1
  printf '%s\n' "$pid"
}

# start_detached <pidfile> <outfile> <command...>: runs <command> in a session
# of its own, so it outlives the calling script, with stdin from /dev/null and
# stdout and stderr appended to <outfile>. The inner bash closes inherited
# fds > 2, so a caller that waits on a pipe (e.g. $(...) or a test runner) is
# never held open, writes its own PID to <pidfile> and then execs <command>
# (same PID). False if <pidfile> is still missing after 5 s. Call it from the
# script's own shell, not from a subshell: a forked "( ... & )" would stay
# around as the JVM's parent and keep the caller's stdout pipe open.
start_detached() {
  local pidfile=$1 out=$2 i
  shift 2
  rm -f "$pidfile" # a stale one from a killed run would fool the waits
  # shellcheck disable=SC2016  # single quotes on purpose: expands in the child
  setsid bash -c '
    pidfile=$1; shift
    for fd in /proc/$$/fd/*; do
      n=${fd##*/}
      if ((n > 2)); then eval "exec $n>&-" 2>/dev/null || true; fi
    done
    echo $$ >"$pidfile"
    exec "$@"
  ' _ "$pidfile" "$@" </dev/null >>"$out" 2>&1 &
  for ((i = 0; i < 50; i++)); do [[ -s "$pidfile" ]] && return 0; sleep 0.1; done
  return 1
}

# already_serving <workdir> <name> <what> <port> <ready-command...>: true if
# the server of <workdir> runs on <port> (<workdir>/<name>.port) and
# <ready-command> succeeds, for an idempotent start; dies if it runs otherwise;
# false if it does not run.
already_serving() {
  local wd=$1 name=$2 what=$3 port=$4 pid
  shift 4
  pid="$(running_pid "$wd")" || return 1
  if [[ "$(cat "$wd/$name.port" 2>/dev/null)" == "$port" ]] && "$@"; then
    log "already running (pid $pid)"
    return 0
  fi
  die "a $what from $wd is already running (pid $pid) on another port; stop it first"
}

# await_ready <workdir> <name> <what> <t0> <timeout-s> <ready-command...>: polls
# <ready-command> every 0.3 s until it succeeds. If the process of
# <workdir>/<name>.pid dies first, or <timeout-s> pass from $SECONDS = <t0>,
# prints the tails of <name>.out and <name>.log, stops the server and exits 1.
await_ready() {
  local wd=$1 name=$2 what=$3 t0=$4 timeout_s=$5 pid
  shift 5
  pid="$(<"$wd/$name.pid")"
  while :; do
    if ! alive "$pid"; then
      log "$what exited during start-up; tail of logs:"
      tail -n 40 "$wd/$name.out" "$wd/$name.log" >&2 2>/dev/null || true
      rm -f "$wd/$name.pid"
      exit 1
    fi
    "$@" && break
    if ((SECONDS - t0 >= timeout_s)); then
      log "not ready after ${timeout_s}s; tail of logs:"
      tail -n 40 "$wd/$name.out" "$wd/$name.log" >&2 2>/dev/null || true
      do_stop "$wd"
      exit 1
    fi
    sleep 0.3
  done
}

# stop_server <workdir> <name> <grace-s>: SIGTERM to the server of <workdir>
# (pidfile <workdir>/<name>.pid), SIGKILL if it is still alive after
# <grace-s>; back once it is gone. Safe to run more than once.
stop_server() {
  local wd=$1 name=$2 grace_s=$3 pid i
  [[ -d "$wd" ]] || { log "no workdir $wd; nothing to stop"; return 0; }
  wd="$(cd "$wd" && pwd)"
  if ! pid="$(running_pid "$wd")"; then
    rm -f "$wd/$name.pid"
    log "not running"
    return 0
  fi
  log "stopping pid $pid (SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace_s * 10; i++)); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    log "still alive after ${grace_s}s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    while alive "$pid"; do sleep 0.1; done
  fi
  rm -f "$wd/$name.pid"
  log "stopped"
}
