-- iibench.lua: an iiBench-style insert benchmark (seed 001, "Benchmarking single-row insert
-- performance on Amazon EC2"): single-row INSERTs into a `purchases` table with an AUTO_INCREMENT
-- primary key and 0 to 3 secondary indexes (--secondary-indexes), whose random columns make every
-- secondary index insert land on a random leaf. The seed saw ~25k inserts/s without secondary
-- indexes and ~9k with 3, falling as the indexes outgrew the buffer pool and at checkpoints.
--
-- Written for benchfleet, not a port of iiBench: the table and index definitions follow the seed's
-- post, and so does its range partitioning when asked for (--partition-rows: every partition holds
-- that many transaction ids, --partitions of them before a last one that takes the rest; the seed
-- used 10 of 100M rows); value ranges are our own. One event inserts one row, so tps is the insert
-- rate and the rows in the table are the prepared rows plus every event so far, which the agent
-- counts second by second (workloads/agent/benchfleet_rows.py).

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local common = require("benchfleet_common")

local SECONDARY = {
   "KEY marketsegment (price, customerid)",
   "KEY registersegment (cashregisterid, price, customerid)",
   "KEY pdc (price, dateandtime, customerid)",
}

common.define {
   prefix = "purchases",
   options = {
      secondary_indexes = {"Secondary indexes on each table, 0 to 3 (marketsegment, registersegment, pdc)", 3},
      partition_rows = {"Rows per range partition on transactionid (0: not partitioned)", 0},
      partitions = {"Range partitions of partition_rows before the last, open one (1 to 1000)", 10},
   },
   columns = "transactionid BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, dateandtime DATETIME, " ..
      "cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price FLOAT NOT NULL",
   keys = function()
      local n = sysbench.opt.secondary_indexes
      if n < 0 or n > #SECONDARY then
         error(string.format("--secondary-indexes must be between 0 and %d, not %d", #SECONDARY, n))
      end
      local keys = {"PRIMARY KEY (transactionid)"}
      for i = 1, n do
         keys[#keys + 1] = SECONDARY[i]
      end
      return keys
   end,
   table_options = function()
      local size, n = sysbench.opt.partition_rows, sysbench.opt.partitions
      if size == 0 then
         return nil
      end
      if size < 0 or n < 1 or n > 1000 then
         error(string.format("--partition-rows must be 0 or more and --partitions 1 to 1000, not %d and %d",
                             size, n))
      end
      local parts = {}
      for p = 0, n - 1 do
         parts[#parts + 1] = string.format("PARTITION p%d VALUES LESS THAN (%d)", p, (p + 1) * size)
      end
      parts[#parts + 1] = string.format("PARTITION p%d VALUES LESS THAN MAXVALUE", n)
      return "PARTITION BY RANGE (transactionid) (" .. table.concat(parts, ", ") .. ")"
   end,
   insert_columns = "dateandtime, cashregisterid, customerid, productid, price",
   row = function()
      local r = sysbench.rand.uniform
      return string.format("NOW(), %d, %d, %d, %d.%02d", r(0, 999), r(0, 99999), r(0, 9999),
                           r(0, 499), r(0, 99))
   end,
}
