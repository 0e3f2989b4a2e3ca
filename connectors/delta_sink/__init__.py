"""DeltaTableSink: any topic into a typed Delta table, appended or merged by key (Debezium-aware)."""
