#include "server/memcached_metrics.h"

#include "server/metric_families.h"

namespace gphkv::server {

void MemcachedMetrics::Tracked::bring_to(uint64_t total) {
  if (total <= reported) return;
  counter->Increment(static_cast<double>(total - reported));
  reported = total;
}

MemcachedMetrics::MemcachedMetrics(prometheus::Registry& r)
    : connections_(&gauge_family(r, "gphkv_memcached_connections", "Open connections of the memcached port.").Add({})) {
  accepted_.counter = &counter_family(r, "gphkv_memcached_connections_accepted_total",
                                      "Connections the memcached port accepted (memcached's total_connections).")
                           .Add({});
  rejected_.counter =
      &counter_family(r, "gphkv_memcached_connections_rejected_total",
                      "Connections turned away past --memcached_max_connections (memcached's rejected_connections).")
           .Add({});
  auto& commands = counter_family(r, "gphkv_memcached_commands_total",
                                  "Commands the memcached port parsed, by command (get, set, mg, ...), whatever "
                                  "their answer (a refused one too); lines the parser rejects are not counted.");
  for (size_t k = 0; k < memcache::kCommandKinds; ++k) {
    commands_[k].counter = &commands.Add({{"command", memcache::command_name(static_cast<memcache::CommandKind>(k))}});
  }
  get_keys_.counter = &counter_family(r, "gphkv_memcached_get_keys_total",
                                      "Keys asked for by get, gets, gat, gats and mg (memcached's cmd_get).")
                           .Add({});
  store_calls_.counter = &counter_family(r, "gphkv_memcached_store_calls_total",
                                         "Calls the memcached port queued to the store: a command each, but a "
                                         "pack of plain gets is one (--memcached_pack_gets).")
                              .Add({});
  packed_gets_.counter = &counter_family(r, "gphkv_memcached_packed_gets_total",
                                         "Plain gets that went to the store in packs (--memcached_pack_gets).")
                              .Add({});
  spun_answers_.counter = &counter_family(r, "gphkv_memcached_spun_answers_total",
                                          "Answers a memcached loop took while spinning for them "
                                          "(--memcached_spin_us) instead of after a wake-up.")
                               .Add({});
}

void MemcachedMetrics::refresh(const memcache::PortCounters& now) {
  connections_->Set(static_cast<double>(now.open_connections));
  accepted_.bring_to(now.accepted_connections);
  rejected_.bring_to(now.rejected_connections);
  for (size_t k = 0; k < memcache::kCommandKinds; ++k) commands_[k].bring_to(now.commands[k]);
  get_keys_.bring_to(now.get_keys);
  store_calls_.bring_to(now.store_calls);
  packed_gets_.bring_to(now.packed_gets);
  spun_answers_.bring_to(now.spun_answers);
}

}  // namespace gphkv::server
