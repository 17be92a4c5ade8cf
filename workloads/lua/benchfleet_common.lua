-- benchfleet_common.lua: what every benchfleet insert script shares (sysbench 1.0.20).
--
-- A script describes only its table (columns, keys) and how one row is made; this module gives it
-- the options, the prepare / run / cleanup commands and the connection handling, so that every
-- script reacts to --tables, --table-size, --threads, --time, --report-interval and --percentile
-- exactly like sysbench's own oltp_* tests.
--
-- Usage, from workloads/lua/<script>.lua:
--
--   local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
--   package.path = dir .. "?.lua;" .. package.path
--   require("benchfleet_common").define {
--      prefix = "seqpk",                              -- tables seqpk1 .. seqpkN
--      columns = "id BIGINT ... , number INT NOT NULL",
--      keys = function() return {"PRIMARY KEY (id)", "KEY idx_number (number)"} end,
--      insert_columns = "number",
--      row = function() return string.format("%d", ...) end,   -- the VALUES of one row
--      table_options = function() return nil end,     -- optional: after ENGINE=..., e.g. PARTITION BY
--   }
--
-- One sysbench event is one single-row INSERT in autocommit mode, so an interval line's tps is
-- rows inserted per second, and a run's "transactions" count is the number of rows it added.

local M = {}

-- Options every script has; a script may add its own with define{options = {...}}.
local COMMON_OPTIONS = {
   tables = {"Number of tables", 1},
   table_size = {"Rows loaded into each table by prepare", 10000},
   prepare_batch = {"Rows per multi-row INSERT while preparing", 1000},
   mysql_storage_engine = {"Storage engine of the tables", "innodb"},
}

-- A UUID-like string (8-4-4-4-12 hex digits, 36 characters, version-4 layout): random in every
-- position that matters for a B-tree, like the UUID primary keys of the seed study.
function M.uuid_like()
   local r = sysbench.rand.uniform
   return string.format("%04x%04x-%04x-4%03x-%04x-%04x%04x%04x",
                        r(0, 65535), r(0, 65535), r(0, 65535), r(0, 4095),
                        r(32768, 49151), r(0, 65535), r(0, 65535), r(0, 65535))
end

local function table_name(def, i)
   return def.prefix .. i
end

local function create_table(def, con, i)
   local parts = {def.columns}
   for _, key in ipairs(def.keys()) do
      parts[#parts + 1] = key
   end
   local sql = string.format("CREATE TABLE %s (%s) ENGINE=%s DEFAULT CHARSET=utf8mb4",
                             table_name(def, i), table.concat(parts, ", "),
                             sysbench.opt.mysql_storage_engine)
   -- A script's own table options (iibench.lua: range partitions), after the engine clause.
   local extra = def.table_options and def.table_options() or nil
   if extra then
      sql = sql .. " " .. extra
   end
   con:query(sql)
end

local function load_rows(def, con, i)
   local size = sysbench.opt.table_size
   local batch = math.max(1, sysbench.opt.prepare_batch)
   local head = string.format("INSERT INTO %s (%s) VALUES ", table_name(def, i), def.insert_columns)
   local done = 0
   while done < size do
      local n = math.min(batch, size - done)
      local values = {}
      for j = 1, n do
         values[j] = "(" .. def.row() .. ")"
      end
      con:query(head .. table.concat(values, ","))
      done = done + n
   end
end

function M.define(def)
   assert(def.prefix and def.columns and def.keys and def.insert_columns and def.row,
          "benchfleet_common.define needs prefix, columns, keys, insert_columns and row")

   local options = {}
   for name, spec in pairs(COMMON_OPTIONS) do
      options[name] = spec
   end
   for name, spec in pairs(def.options or {}) do
      options[name] = spec
   end
   sysbench.cmdline.options = options

   -- prepare: threads share the tables (thread k creates tables k+1, k+1+threads, ...), like
   -- sysbench's own parallel prepare, so --threads speeds up loading several tables.
   local function cmd_prepare()
      local con = sysbench.sql.driver():connect()
      for i = sysbench.tid % sysbench.opt.threads + 1, sysbench.opt.tables, sysbench.opt.threads do
         print(string.format("Creating table '%s' with %d rows...", table_name(def, i),
                             sysbench.opt.table_size))
         create_table(def, con, i)
         load_rows(def, con, i)
      end
      con:disconnect()
   end

   local function cmd_cleanup()
      local con = sysbench.sql.driver():connect()
      for i = 1, sysbench.opt.tables do
         con:query("DROP TABLE IF EXISTS " .. table_name(def, i))
      end
      con:disconnect()
   end

   sysbench.cmdline.commands = {
      prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
      cleanup = {cmd_cleanup},
   }

   -- run: sysbench calls these in every worker thread (each has its own Lua state).
   local con
   local heads = {}

   function thread_init()
      con = sysbench.sql.driver():connect()
      for i = 1, sysbench.opt.tables do
         heads[i] = string.format("INSERT INTO %s (%s) VALUES (", table_name(def, i), def.insert_columns)
      end
   end

   function event()
      local i = sysbench.opt.tables > 1 and sysbench.rand.uniform(1, sysbench.opt.tables) or 1
      con:query(heads[i] .. def.row() .. ")")
   end

   function thread_done()
      con:disconnect()
   end
end

return M
