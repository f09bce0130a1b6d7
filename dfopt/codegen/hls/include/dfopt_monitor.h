// dfopt_monitor.h -- the deadlock and leftover-token detector of dfopt's HLS software simulation.
//
// Internal header: included by hls_stream.h and dfopt_dataflow.h; generated code never names it.
//
// One process-wide monitor counts the live dataflow processes (threads started by a dataflow
// region), the ones blocked on a stream and the ones waiting for a nested region to finish.
// A thread that blocks registers itself while it holds its stream's lock, and whoever makes its
// condition true (a read that frees a slot, a write that adds a token) unregisters it under the
// same lock before it can run again. So whenever the monitor sees every live process blocked or
// waiting, no thread can ever move again: that is a deadlock, reported with the stream each
// process waits on, and the program ends with exit code 3. No timer, no guess.
//
// Exit codes: 3 deadlock, 4 leftover tokens in a FIFO at the end of its region, 5 misuse of the
// runtime or an exception escaping a process.

#ifndef DFOPT_MONITOR_H
#define DFOPT_MONITOR_H

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace dfopt {

namespace exit_code {
constexpr int deadlock = 3;
constexpr int leftover = 4;
constexpr int misuse = 5;
}  // namespace exit_code

namespace detail {

struct Region;

// One dataflow process: a thread running one kernel call of a region.
struct Proc {
  std::uint64_t id = 0;
  std::string name;
  Region* region = nullptr;
  std::function<void()> body;
  bool finished = false;
};

// One run of a dataflow region (DFOPT_DATAFLOW_BEGIN ... END, or dfopt::dataflow()).
struct Region {
  std::uint64_t id = 0;
  std::string name;
  Proc* parent = nullptr;            // process that runs this region; nullptr: a plain thread
  std::vector<std::unique_ptr<Proc>> procs;
  std::set<std::uint64_t> touched;   // ids of the streams its processes read or wrote
  int remaining = 0;                 // processes not finished yet
  bool started = false;
  bool done = false;
  bool parent_joining = false;       // parent counted in Monitor::joining
  std::condition_variable done_cv;
};

// A thread blocked on a stream. Lives on the blocked thread's stack.
struct Waiter {
  Proc* proc = nullptr;              // nullptr: a thread outside every dataflow process
  bool write = false;
  const std::string* stream = nullptr;
  std::size_t depth = 0;
  std::uint64_t token = 0;           // index of the token it waits to read or write
  bool woken = false;                // set by the thread that made the condition true
};

// What the monitor knows of one live stream (guarded by Monitor::mu).
struct StreamInfo {
  const std::string* name = nullptr;
  const std::atomic<std::size_t>* count = nullptr;
  std::uint64_t owner_region = 0;    // region open when it was declared; 0: outside every region
  std::string owner_name;
  std::uint64_t writer_region = 0, reader_region = 0;
  std::uint64_t writer_proc = 0, reader_proc = 0;
  std::string writer_name, reader_name;
};

inline Proc*& tl_proc() { static thread_local Proc* p = nullptr; return p; }               // process run by this thread
inline std::vector<Region*>& tl_open() { static thread_local std::vector<Region*> v; return v; }          // regions opened here, innermost last

[[noreturn]] inline void fatal(int code, const std::string& message) {
  std::fputs(message.c_str(), stderr);
  std::fflush(nullptr);
  std::_Exit(code);
}

inline std::string proc_label(const Proc* p) {
  return p ? "process " + p->name : std::string("thread outside dataflow (testbench)");
}

class Monitor {
 public:
  std::mutex mu;

  std::uint64_t new_id() { return next_id_.fetch_add(1); }

  // -- streams ---------------------------------------------------------------------------------
  // Registers a stream declared by this thread; returns its owner region id (0 if none).
  std::uint64_t add_stream(std::uint64_t id, const std::string* name,
                           const std::atomic<std::size_t>* count) {
    const Region* owner = nullptr;
    if (!tl_open().empty()) owner = tl_open().back();
    else if (tl_proc()) owner = tl_proc()->region;
    std::lock_guard<std::mutex> lk(mu);
    StreamInfo& info = streams_[id];
    info.name = name;
    info.count = count;
    info.owner_region = owner ? owner->id : 0;
    if (owner) info.owner_name = owner->name;
    return info.owner_region;
  }

  // Called by a stream's destructor: a FIFO of a region must not die holding tokens.
  void remove_stream(std::uint64_t id) {
    std::lock_guard<std::mutex> lk(mu);
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    StreamInfo info = it->second;
    streams_.erase(it);
    std::size_t n = info.count->load();
    if (info.owner_region != 0 && n > 0) {
      fatal(exit_code::leftover, "ERROR in dataflow " + info.owner_name +
                                     ": leftover tokens in stream " + *info.name + ": " +
                                     std::to_string(n) + describe_ends(info) +
                                     " when it went out of scope\n" + leftover_hint());
    }
  }

  // First access of a stream by this thread (in the given direction): remember who uses it,
  // and refuse a second producer or consumer inside one region (Vitis requires one of each).
  void note_access(std::uint64_t id, bool write) {
    Proc* p = tl_proc();
    std::lock_guard<std::mutex> lk(mu);
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    StreamInfo& info = it->second;
    std::uint64_t region = p ? p->region->id : 0;
    std::uint64_t pid = p ? p->id : 0;
    std::uint64_t& side_region = write ? info.writer_region : info.reader_region;
    std::uint64_t& side_proc = write ? info.writer_proc : info.reader_proc;
    std::string& side_name = write ? info.writer_name : info.reader_name;
    if (p && side_region == region && side_proc != pid && side_proc != 0) {
      fatal(exit_code::misuse,
            "ERROR in dataflow " + p->region->name + ": stream " + *info.name + " is " +
                (write ? "written" : "read") + " by two processes, " + side_name + " and " +
                p->name + " (a dataflow stream needs exactly one producer and one consumer)\n");
    }
    side_region = region;
    side_proc = pid;
    side_name = p ? p->name : "testbench";
    if (p) p->region->touched.insert(id);
  }

  // -- blocking (called with the stream's lock held) -------------------------------------------
  void block(Waiter& w) {
    std::lock_guard<std::mutex> lk(mu);
    waiters_.push_back(&w);
    if (w.proc) ++blocked_;
    check_deadlock_locked();
  }

  void wake(std::vector<Waiter*>& ws) {
    std::lock_guard<std::mutex> lk(mu);
    for (Waiter* w : ws) {
      waiters_.erase(std::find(waiters_.begin(), waiters_.end(), w));
      if (w->proc) --blocked_;
      w->woken = true;
    }
    ws.clear();
  }

  // -- regions ---------------------------------------------------------------------------------
  void start_region(Region& r) {
    std::lock_guard<std::mutex> lk(mu);
    r.parent = tl_proc();
    if (r.parent) r.name = r.parent->region->name + "/" + r.name;
    r.remaining = static_cast<int>(r.procs.size());
    r.started = true;
    r.done = r.procs.empty();
    live_ += r.remaining;
    regions_.push_back(&r);
  }

  void process_exit(Proc& p) {
    std::lock_guard<std::mutex> lk(mu);
    Region& r = *p.region;
    p.finished = true;
    --live_;
    if (--r.remaining == 0) {
      if (r.parent_joining) {
        --joining_;
        r.parent_joining = false;
      }
      r.done = true;
      r.done_cv.notify_all();
    }
    check_deadlock_locked();
  }

  // The thread that started the region waits for all its processes.
  void join_region(Region& r) {
    std::unique_lock<std::mutex> lk(mu);
    if (r.done) return;
    if (r.parent) {
      ++joining_;
      r.parent_joining = true;
      check_deadlock_locked();
    }
    r.done_cv.wait(lk, [&] { return r.done; });
  }

  // After the join: every FIFO of the region must be empty.
  void end_region(Region& r) {
    std::lock_guard<std::mutex> lk(mu);
    regions_.erase(std::find(regions_.begin(), regions_.end(), &r));
    std::string report;
    for (std::uint64_t id : r.touched) {
      auto it = streams_.find(id);
      if (it == streams_.end()) continue;
      const StreamInfo& info = it->second;
      bool internal = info.owner_region == r.id ||
                      (info.writer_region == r.id && info.reader_region == r.id);
      std::size_t n = info.count->load();
      if (internal && n > 0) {
        report += "ERROR in dataflow " + r.name + ": leftover tokens in stream " + *info.name +
                  ": " + std::to_string(n) + describe_ends(info) + "\n";
      }
    }
    if (!report.empty()) fatal(exit_code::leftover, report + leftover_hint());
  }

 private:
  std::atomic<std::uint64_t> next_id_{1};
  int live_ = 0;      // processes started and not finished
  int blocked_ = 0;   // live processes blocked on a stream
  int joining_ = 0;   // live processes waiting for a nested region
  std::vector<Waiter*> waiters_;
  std::vector<Region*> regions_;
  std::unordered_map<std::uint64_t, StreamInfo> streams_;

  static std::string describe_ends(const StreamInfo& info) {
    std::string s = " (written by " + (info.writer_name.empty() ? "nobody" : info.writer_name);
    return s + ", read by " + (info.reader_name.empty() ? "nobody" : info.reader_name) + ")";
  }

  static std::string leftover_hint() {
    return "  hint: the consumer of a stream must read every token its producer writes\n";
  }

  void check_deadlock_locked() {
    if (waiters_.empty() || blocked_ + joining_ != live_) return;
    report_deadlock_locked();
  }

  [[noreturn]] void report_deadlock_locked() {
    std::vector<Waiter*> ws = waiters_;
    std::stable_sort(ws.begin(), ws.end(), [](const Waiter* a, const Waiter* b) {
      std::uint64_t ia = a->proc ? a->proc->id : UINT64_MAX;
      std::uint64_t ib = b->proc ? b->proc->id : UINT64_MAX;
      return ia < ib;
    });
    std::vector<std::string> names;
    std::vector<const Region*> blocked_regions;
    for (const Waiter* w : ws) {
      if (!w->proc) continue;
      const Region* r = w->proc->region;
      if (std::find(blocked_regions.begin(), blocked_regions.end(), r) != blocked_regions.end())
        continue;
      blocked_regions.push_back(r);
      if (std::find(names.begin(), names.end(), r->name) == names.end()) names.push_back(r->name);
    }
    std::string msg = names.empty() ? "DEADLOCK outside any dataflow region: "
                                    : "DEADLOCK in dataflow " + join(names) + ": ";
    std::vector<std::string> items;
    for (const Waiter* w : ws) {
      std::string item = proc_label(w->proc) + " blocked " + (w->write ? "writing " : "reading ") +
                         *w->stream;
      item += w->write ? " (full, depth " + std::to_string(w->depth) + ")" : " (empty)";
      item += " at token " + std::to_string(w->token);
      items.push_back(item);
    }
    msg += join(items) + "\n";
    std::vector<std::string> finished, nested;
    for (const Region* r : regions_) {
      for (const auto& p : r->procs) {
        if (p->finished && std::find(blocked_regions.begin(), blocked_regions.end(), r) !=
                               blocked_regions.end())
          finished.push_back(p->name);
      }
      if (r->parent_joining) nested.push_back(r->parent->name + " (waits for " + r->name + ")");
    }
    if (!finished.empty()) msg += "  finished processes: " + join(finished) + "\n";
    if (!nested.empty()) msg += "  waiting for a nested dataflow: " + join(nested) + "\n";
    msg += "  hint: raise the depth of a stream reported full (#pragma HLS stream depth and "
           "DFOPT_STREAM_DEPTH); if none is full, a stream reported empty is read more times "
           "than it is written\n";
    fatal(exit_code::deadlock, msg);
  }

  static std::string join(const std::vector<std::string>& parts) {
    std::string s;
    for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
    return s;
  }
};

// Never destroyed: streams with static storage may outlive any other static object.
inline Monitor& monitor() {
  static Monitor* m = new Monitor();
  return *m;
}

}  // namespace detail
}  // namespace dfopt

#endif  // DFOPT_MONITOR_H
