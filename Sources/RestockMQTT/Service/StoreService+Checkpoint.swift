import Logging
import RestockPipeline

extension StoreService {
    /// Copies both files' write-ahead logs into them and truncates the logs, on the pipeline's thread, as the store stops:
    /// what the store deleted since its last checkpoint (a forgotten customer's messages, acknowledged since) is then in
    /// no file of the data directory (docs/operations.md, "Forgetting a customer").
    func checkpointAtStop() async {
        await storage.withExecutor {
            do {
                try storage.checkpoint()
            } catch {
                logger.warning(
                    "cannot tidy the store's storage as it stops (SQLite: checkpoint the write-ahead logs; PostgreSQL: vacuum the tables): nothing is lost",
                    metadata: [StoreLoggingKeys.error: "\(error)"])
            }
        }
    }
}
