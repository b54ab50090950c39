export { errorBody, httpStatusOf, type ErrorBody } from '../http-status.js'
